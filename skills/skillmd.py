"""``SKILL.md`` folders in and out of the library, exactly.

One folder per skill name, as in Anthropic's Agent Skills format: YAML front matter (``name`` <= 64 lowercase
letters, digits and hyphens, matching the folder; ``description`` <= 1024 characters; optional ``license``,
``compatibility``, ``allowed-tools``, ``metadata``), then the body, then the rule (if any) in a fenced block::

    ---
    name: rank-by-recency
    description: Rank recent items first when the user's history is short.
    metadata:
      version: '2'
      status: active
      parent: rank-by-recency@1
    ---
    Put the items the user touched last at the top.

    ```rule
    history < 3 -> rank_recent
    ```

``<name>/SKILL.md`` holds the name's newest version that was not rejected (what an Agent Skills loader reads);
every other version is ``<name>/versions/v<k>.md`` in the same format. Lineage and the edit that made a version
live in ``metadata`` as strings (``parent: name@version``, ``edit-*``), so exporting a library and importing it
elsewhere gives the same versions, edits and lineage, and exporting again gives the same bytes. A bad file is a
:class:`SkillFormatError` naming the file and the field.

A folder may come from anyone, so what is read is bounded (the ``MAX_*`` constants below, listed in
docs/reliability.md): regular files only (no symlink, FIFO or device), each and all of them under a size cap;
front-matter values plain strings within the spec's lengths, YAML anchors and aliases refused.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import networkx as nx
import yaml
from sqlmodel import Session

from skills import files
from skills.library import (GATES, OPERATORS, RULE_FENCE, STATUSES, Skill, SkillEdit, SkillError, SkillLibrary, check,
                            utcnow)

FIELDS = ("name", "description", "license", "compatibility", "allowed-tools", "metadata")
EXTRA = ("license", "compatibility", "allowed-tools")  # Agent Skills fields Catallax keeps but does not use
META = ("version", "status", "role", "parent", "merge-parent", "created", "edit-operator", "edit-target",
        "edit-partner", "edit-diagnosis", "edit-gate", "edit-score-before", "edit-score-after", "edit-created")
REF = re.compile(r"^[a-z0-9-]+@[1-9][0-9]{0,8}$")
VERSION = re.compile(r"^[1-9][0-9]{0,8}$")  # ASCII digits only ("²".isdigit() is True), below 10^9
# Bounds on what a SKILL.md folder may hold (a folder may come from anyone; see docs/reliability.md). The
# Agent Skills spec caps name (64) and description (1024, skills/library.py) and compatibility (500).
MAX_FILE_BYTES = 256 * 1024  # one SKILL.md or versions/v<k>.md
MAX_FRONT_CHARS = 32 * 1024  # its front matter
MAX_BODY_CHARS = 100_000  # the body (LLM skill lines are far shorter: one line of at most 200 characters)
MAX_RULE_CHARS = 10_000
MAX_FIELD_CHARS = {"compatibility": 500, "license": 1024, "allowed-tools": 1024}
MAX_META_CHARS, MAX_DIAGNOSIS_CHARS = 1024, 16_000  # a metadata value; edit-diagnosis (JSON)
MAX_FILES, MAX_TOTAL_BYTES = 10_000, 64 * 2**20  # one import
FENCE_LINE = re.compile(rf"(?m)^{re.escape(RULE_FENCE)}$")


class SkillFormatError(SkillError):
    """A SKILL.md file that cannot be read; the message is ``FILE: FIELD: problem``."""


@dataclass
class Parsed:
    """One file's version, with its lineage still as ``name@version`` references."""

    path: Path
    skill: Skill
    parent: str | None
    merge_parent: str | None
    edit: SkillEdit | None


# ------------------------------------------------------------------ one file
def render(skill: Skill, labels: dict[int, str], edit: SkillEdit | None) -> str:
    """A version as SKILL.md text; ``labels`` maps version ids to ``name@version`` (for its parents)."""
    meta = {"version": str(skill.version), "status": skill.status}
    if skill.role is not None:
        meta["role"] = skill.role
    def fail(field: str, problem: str):  # a row of anyone's database: named by its table and column
        raise SkillFormatError(f"skill {skill.name!r} version {skill.version!r}: {field}: {problem}")

    for field, key in (("parent_id", "parent"), ("merge_parent_id", "merge-parent")):
        if (parent := getattr(skill, field)) is not None:
            if parent not in labels:
                fail(f"skill.{field} = {parent!r}", "no such version in the library")
            meta[key] = labels[parent]
    meta["created"] = skill.created_at.isoformat()
    if edit is not None:
        meta |= {"edit-operator": edit.operator, "edit-target": edit.target}
        optional = {"edit-partner": edit.partner, "edit-diagnosis": edit.diagnosis,
                    "edit-score-before": edit.score_before, "edit-score-after": edit.score_after}
        meta |= {k: str(v) for k, v in optional.items() if v is not None}
        meta |= {"edit-gate": edit.gate, "edit-created": edit.created_at.isoformat()}
    front = {"name": skill.name, "description": skill.description, **_extra(skill.extra, fail), "metadata": meta}
    text = "---\n" + yaml.safe_dump(front, sort_keys=False, allow_unicode=True) + "---\n" + skill.body
    if skill.rule is not None:
        text += f"\n\n{RULE_FENCE}\n{skill.rule}\n```"
    return text + "\n"


MAX_EXTRA_DEPTH = 16
"""Levels a stored ``skill.extra`` value may nest (front matter fields are flat; ``metadata`` is one level)."""


def _extra(stored: str | None, fail) -> dict:
    """A version's other front-matter fields from ``skill.extra`` (a JSON object), checked: a foreign row's
    text that is not JSON, not an object or nested past :data:`MAX_EXTRA_DEPTH` fails naming the column."""
    try:
        extra = json.loads(stored or "{}")
    except RecursionError:
        fail("skill.extra", f"nested deeper than {MAX_EXTRA_DEPTH} levels")
    except (ValueError, TypeError) as err:
        fail("skill.extra", f"not JSON ({' '.join(str(err).split())[:80]})")
    if not isinstance(extra, dict):
        fail("skill.extra", "not a JSON object")
    stack = [(extra, 0)]
    while stack:  # measured without recursion: yaml's dump recurses once per level
        node, depth = stack.pop()
        if depth > MAX_EXTRA_DEPTH:
            fail("skill.extra", f"nested deeper than {MAX_EXTRA_DEPTH} levels")
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack += [(v, depth + 1) for v in children]
    return extra


def parse(text: str, path: Path, folder_name: str | None = None) -> Parsed:
    """SKILL.md text -> a version (not yet in any library). ``folder_name``: the name it must have."""

    def fail(field: str, problem: str):
        raise SkillFormatError(f"{path}: {field}: {problem}")

    if not text.startswith("---\n"):
        fail("front matter", "the file must start with a '---' line")
    end = text.find("\n---\n", 3)
    if end < 0:
        fail("front matter", "no closing '---' line")
    if end > MAX_FRONT_CHARS:
        fail("front matter", f"longer than {MAX_FRONT_CHARS} characters")
    front = _yaml(text[4 : end + 1], fail)
    for key in front:
        if key not in FIELDS:
            fail(str(key)[:64], f"unknown field (expected {', '.join(FIELDS)})")
    for key, cap in MAX_FIELD_CHARS.items():
        if key in front and not (isinstance(front[key], str) and len(front[key]) <= cap):
            fail(key, f"must be a plain string of at most {cap} characters")
    for key in ("name", "description"):
        if key not in front:
            fail(key, "missing")
        problem = check(key, front[key])
        if problem:
            fail(key, problem)
    if folder_name is not None and front["name"] != folder_name:
        fail("name", f"{front['name']!r} differs from its folder {folder_name!r}")

    rest = text[end + 5 :]
    rest = rest[:-1] if rest.endswith("\n") else rest
    body, rule = rest, None
    fence = FENCE_LINE.search(rest)
    if fence:
        body = rest[: fence.start()]
        for _ in range(2):  # the blank line written before the fence
            body = body[:-1] if body.endswith("\n") else body
        tail = rest[fence.end() + 1 :]
        if not tail.endswith("\n```") or "```" in tail[:-4]:
            fail("rule", f"the {RULE_FENCE} block must close with ``` and end the file")
        rule = tail[:-4]
    for key, value, cap in (("body", body, MAX_BODY_CHARS), ("rule", rule, MAX_RULE_CHARS)):
        problem = f"{len(value)} characters, at most {cap}" if value is not None and len(value) > cap else check(key, value)
        if problem:
            fail(key, problem)

    meta = front.get("metadata") or {}
    if not isinstance(meta, dict):
        fail("metadata", "must be a mapping of keys to strings")
    for key, value in meta.items():
        if key not in META:
            fail(f"metadata.{str(key)[:64]}", f"unknown key (expected {', '.join(META)})")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            fail(f"metadata.{key}", "must be a string")
        cap = MAX_DIAGNOSIS_CHARS if key == "edit-diagnosis" else MAX_META_CHARS
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**cap:
            fail(f"metadata.{key}", f"longer than {cap} characters")
        if len(str(value)) > cap:
            fail(f"metadata.{key}", f"longer than {cap} characters")
    meta = {k: str(v) for k, v in meta.items()}

    def meta_int(key: str) -> int:
        if not VERSION.match(meta[key]):
            fail(f"metadata.{key}", f"{meta[key][:32]!r} is not a positive integer below 10^9")
        return int(meta[key])

    def meta_float(key: str) -> float | None:
        if key not in meta:
            return None
        try:
            return float(meta[key])
        except ValueError:
            fail(f"metadata.{key}", f"{meta[key]!r} is not a number")

    def meta_time(key: str) -> datetime:
        try:
            value = datetime.fromisoformat(meta[key])
        except ValueError:
            fail(f"metadata.{key}", f"{meta[key]!r} is not an ISO date-time")
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)

    def meta_choice(key: str, choices: tuple, default: str) -> str:
        value = meta.get(key, default)
        if value not in choices:
            fail(f"metadata.{key}", f"{value!r} is not one of {', '.join(choices)}")
        return value

    for key in ("parent", "merge-parent"):
        if key in meta and not REF.match(meta[key]):
            fail(f"metadata.{key}", f"{meta[key]!r} is not a name@version reference")
    if "merge-parent" in meta and "parent" not in meta:
        fail("metadata.merge-parent", "a merge needs a parent too")
    created = meta_time("created") if "created" in meta else utcnow()

    edit = None
    if any(k.startswith("edit-") for k in meta):
        for key in ("edit-operator", "edit-target", "edit-created"):
            if key not in meta:
                fail(f"metadata.{key}", "missing (other edit-* keys are present)")
        if "edit-diagnosis" in meta:
            try:
                json.loads(meta["edit-diagnosis"])
            except json.JSONDecodeError:
                fail("metadata.edit-diagnosis", "not valid JSON")
        edit = SkillEdit(operator=meta_choice("edit-operator", OPERATORS, ""), target=meta["edit-target"],
                         partner=meta.get("edit-partner"), diagnosis=meta.get("edit-diagnosis"),
                         gate=meta_choice("edit-gate", GATES, "ungated"), score_before=meta_float("edit-score-before"),
                         score_after=meta_float("edit-score-after"), created_at=meta_time("edit-created"), library="")

    extra = {k: front[k] for k in EXTRA if k in front}
    skill = Skill(library="", name=front["name"], version=meta_int("version") if "version" in meta else 1,
                  description=front["description"], body=body, rule=rule, role=meta.get("role"),
                  status=meta_choice("status", STATUSES, "active"), extra=json.dumps(extra) if extra else None,
                  created_at=created)
    return Parsed(path, skill, meta.get("parent"), meta.get("merge-parent"), edit)


class _FrontMatterLoader(yaml.SafeLoader):
    """The safe loader reading dates as PyYAML does, whatever lm-format-enforcer (vLLM imports it) did to it."""
    yaml_constructors = {**yaml.SafeLoader.yaml_constructors,
                         "tag:yaml.org,2002:timestamp": yaml.SafeLoader.construct_yaml_timestamp}


def _yaml(front: str, fail) -> dict:
    """The front matter as a mapping: YAML without anchors and aliases (an alias bomb is a few hundred bytes
    that expand to gigabytes) or tags beyond plain scalars, collections and strings."""
    try:
        anchored = any(isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None
                       for event in yaml.parse(front, Loader=_FrontMatterLoader))
        data = None if anchored else yaml.load(front, Loader=_FrontMatterLoader)  # noqa: S506 (a safe loader)
    except yaml.YAMLError as err:
        fail("front matter", f"not valid YAML ({' '.join(str(err).split())[:200]})")
    except RecursionError:
        fail("front matter", "nested too deeply")
    except ValueError as err:  # an integer past Python's digit limit
        fail("front matter", f"not readable ({' '.join(str(err).split())[:120]})")
    if anchored:  # checked outside the try: fail's error is a ValueError too
        fail("front matter", "YAML anchors and aliases (& and *) are not allowed")
    if not isinstance(data, dict):
        fail("front matter", "must be a YAML mapping of fields")
    return data


def read_text(path: Path) -> str:
    """A SKILL.md file's text: a regular UTF-8 file of at most :data:`MAX_FILE_BYTES`, or a SkillFormatError."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO opens without waiting
    except OSError as err:
        problem = "a symbolic link (not followed)" if err.errno == errno.ELOOP else err.strerror
        raise SkillFormatError(f"{path}: file: {problem}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SkillFormatError(f"{path}: file: not a regular file")
        data = b""
        while len(data) <= MAX_FILE_BYTES and (chunk := os.read(fd, MAX_FILE_BYTES + 1 - len(data))):
            data += chunk
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        raise SkillFormatError(f"{path}: file: larger than {MAX_FILE_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise SkillFormatError(f"{path}: file: not UTF-8 text (byte {err.start})") from None


# ------------------------------------------------------------- whole libraries
def export_library(library: SkillLibrary, folder: Path) -> list[Path]:
    """Write every version of every skill under ``folder`` (which must be new or empty)."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise SkillFormatError(f"{folder}: folder: not a folder; export into a new folder")
    if folder.exists() and any(folder.iterdir()):
        raise SkillFormatError(f"{folder}: folder: not empty; export into a new folder")
    versions, edits = library.versions(), library.edits()
    for v in versions:  # the library may come from anyone's database: its names become paths, so check them
        problem = check("name", v.name) or (None if type(v.version) is int and v.version >= 1 else "not positive")
        if problem:
            raise SkillFormatError(f"{folder}: skill {v.name!r} version {v.version!r}: {problem}; nothing written")
    labels = {v.id: v.label for v in versions}
    texts = []
    for name in sorted({v.name for v in versions}):
        own = [v for v in versions if v.name == name]
        kept = [v for v in own if v.status != "rejected"]
        head = max(kept or own, key=lambda v: v.version)
        for v in own:
            parts = (name, "SKILL.md") if v is head else (name, "versions", f"v{v.version}.md")
            texts.append((files.under(folder, *parts), render(v, labels, edits.get(v.edit_id))))
    for path, text in texts:  # every name checked and rendered before the first file is written
        files.write(folder, path, text)
    return [path for path, _ in texts]


def read_folder(folder: Path) -> dict[str, Parsed]:
    """Parse SKILL.md folders (or one skill folder): ``name@version`` -> its version; touches no database."""
    folder = Path(folder)
    if not folder.is_dir():
        raise SkillFormatError(f"{folder}: folder: not a folder")
    single = os.path.lexists(folder / "SKILL.md")
    skill_dirs = [folder] if single else sorted(p.parent for p in folder.glob("*/SKILL.md"))
    if not skill_dirs:
        raise SkillFormatError(f"{folder}: folder: no SKILL.md found (expected {folder}/<name>/SKILL.md)")
    paths: list[tuple[Path, str]] = []  # (file, the skill folder it belongs to)
    for d in skill_dirs:
        for sub in (d, d / "versions"):
            if sub != folder and sub.is_symlink():
                raise SkillFormatError(f"{sub}: folder: a symbolic link (not followed)")
        paths += [(path, d.name) for path in [d / "SKILL.md", *sorted((d / "versions").glob("*.md"))]]
        if len(paths) > MAX_FILES:
            raise SkillFormatError(f"{folder}: folder: more than {MAX_FILES} SKILL.md files")
    parsed: dict[str, Parsed] = {}
    total = 0
    for path, name in paths:
        text = read_text(path)
        total += len(text)
        if total > MAX_TOTAL_BYTES:
            raise SkillFormatError(f"{folder}: folder: more than {MAX_TOTAL_BYTES} bytes of SKILL.md files")
        p = parse(text, path, name)
        if p.skill.label in parsed:
            first = parsed[p.skill.label].path
            raise SkillFormatError(f"{path}: metadata.version: {p.skill.label} is also {first}")
        parsed[p.skill.label] = p
    return parsed


def import_library(library: SkillLibrary, folder: Path) -> list[Skill]:
    """Read SKILL.md folders (or one skill folder) into ``library`` in one transaction; all or nothing."""
    parsed = read_folder(folder)
    existing = {v.label: v for v in library.versions()}
    for label, p in parsed.items():
        if label in existing:
            raise SkillFormatError(f"{p.path}: metadata.version: {label} is already in library {library.name!r}")

    graph = nx.DiGraph()
    graph.add_nodes_from(parsed)
    for label, p in parsed.items():
        for key, ref in (("parent", p.parent), ("merge-parent", p.merge_parent)):
            if ref is not None and ref not in parsed and ref not in existing:
                raise SkillFormatError(f"{p.path}: metadata.{key}: unknown version {ref!r}")
            if ref in parsed:
                graph.add_edge(ref, label)
    if not nx.is_directed_acyclic_graph(graph):
        raise SkillFormatError(f"{folder}: metadata.parent: the parents form a cycle")

    ids = {label: v.id for label, v in existing.items()}
    rows = []
    with Session(library.engine, expire_on_commit=False) as s:
        for label in nx.lexicographical_topological_sort(graph, key=lambda ref: (parsed[ref].skill.created_at, ref)):
            p = parsed[label]
            row = p.skill
            row.library = library.name
            if p.edit is not None:
                p.edit.library = library.name
                s.add(p.edit)
                s.flush()
                row.edit_id = p.edit.id
            row.parent_id = ids.get(p.parent)
            row.merge_parent_id = ids.get(p.merge_parent)
            s.add(row)
            s.flush()
            ids[label] = row.id
            rows.append(row)
        s.commit()
    return rows
