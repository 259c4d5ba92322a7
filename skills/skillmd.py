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

A folder may come from anyone, so what is read is bounded (listed in docs/reliability.md): each file as
skills/skillmd_parse.py reads it, and all of them under the caps below.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import networkx as nx
import yaml
from sqlmodel import Session

from skills import files
from skills.library import RULE_FENCE, Skill, SkillEdit, SkillLibrary, check
from skills.skillmd_parse import Parsed, SkillFormatError, parse, read_text

MAX_FILES, MAX_TOTAL_BYTES = 10_000, 64 * 2**20  # one import (one file's bounds: skills/skillmd_parse.py)


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
