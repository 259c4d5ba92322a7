"""One ``SKILL.md`` file read into a version, within bounds.

A folder may come from anyone, so what is read is bounded (the ``MAX_*`` constants below, listed in
docs/reliability.md): regular files only (no symlink, FIFO or device), each under a size cap; front-matter values
plain strings within the Agent Skills spec's lengths; YAML anchors and aliases refused. Every problem is a
:class:`SkillFormatError` whose message is ``FILE: FIELD: problem``, so a user sees in one line what to fix.
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

import yaml

from skills.library import GATES, OPERATORS, RULE_FENCE, STATUSES, Skill, SkillEdit, SkillError, check, utcnow

FIELDS = ("name", "description", "license", "compatibility", "allowed-tools", "metadata")
EXTRA = ("license", "compatibility", "allowed-tools")  # Agent Skills fields Catallax keeps but does not use
META = ("version", "status", "role", "parent", "merge-parent", "created", "edit-operator", "edit-target",
        "edit-partner", "edit-diagnosis", "edit-gate", "edit-score-before", "edit-score-after", "edit-created")
REF = re.compile(r"^[a-z0-9-]+@[1-9][0-9]{0,8}$")
VERSION = re.compile(r"^[1-9][0-9]{0,8}$")  # ASCII digits only ("²".isdigit() is True), below 10^9
# The Agent Skills spec caps name (64) and description (1024, skills/library.py) and compatibility (500).
MAX_FILE_BYTES = 256 * 1024  # one SKILL.md or versions/v<k>.md
MAX_FRONT_CHARS = 32 * 1024  # its front matter
MAX_BODY_CHARS = 100_000  # the body (LLM skill lines are far shorter: one line of at most 200 characters)
MAX_RULE_CHARS = 10_000
MAX_FIELD_CHARS = {"compatibility": 500, "license": 1024, "allowed-tools": 1024}
MAX_META_CHARS, MAX_DIAGNOSIS_CHARS = 1024, 16_000  # a metadata value; edit-diagnosis (JSON)
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


def parse(text: str, path: Path, folder_name: str | None = None) -> Parsed:
    """SKILL.md text -> a version (not yet in any library). ``folder_name``: the name it must have."""

    def fail(field: str, problem: str):
        raise SkillFormatError(f"{path}: {field}: {problem}")

    front, rest = _front_matter(text, folder_name, fail)
    body, rule = _body_and_rule(rest, fail)
    meta = _Metadata(front.get("metadata") or {}, fail)
    extra = {k: front[k] for k in EXTRA if k in front}
    skill = Skill(library="", name=front["name"], version=meta.version(), description=front["description"],
                  body=body, rule=rule, role=meta.get("role"), status=meta.choice("status", STATUSES, "active"),
                  extra=json.dumps(extra) if extra else None,
                  created_at=meta.time("created") if "created" in meta else utcnow())
    return Parsed(path, skill, meta.get("parent"), meta.get("merge-parent"), meta.edit())


def _front_matter(text: str, folder_name: str | None, fail) -> tuple[dict, str]:
    """The front matter's fields, checked, and the text after it."""
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
    return front, text[end + 5 :]


def _body_and_rule(rest: str, fail) -> tuple[str, str | None]:
    """The body, and the rule from its fenced block (which must end the file), each checked."""
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
    return body, rule


class _Metadata:
    """The ``metadata`` mapping, checked key by key and held as strings (how they are written), with typed reads
    that fail naming the key."""

    def __init__(self, raw, fail):
        if not isinstance(raw, dict):
            fail("metadata", "must be a mapping of keys to strings")
        for key, value in raw.items():
            if key not in META:
                fail(f"metadata.{str(key)[:64]}", f"unknown key (expected {', '.join(META)})")
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                fail(f"metadata.{key}", "must be a string")
            cap = MAX_DIAGNOSIS_CHARS if key == "edit-diagnosis" else MAX_META_CHARS
            if isinstance(value, int) and abs(value) >= 10**cap or len(str(value)) > cap:  # no 5000-digit str()
                fail(f"metadata.{key}", f"longer than {cap} characters")
        self.values, self.fail = {k: str(v) for k, v in raw.items()}, fail
        for key in ("parent", "merge-parent"):
            if key in self and not REF.match(self.values[key]):
                fail(f"metadata.{key}", f"{self.values[key]!r} is not a name@version reference")
        if "merge-parent" in self and "parent" not in self:
            fail("metadata.merge-parent", "a merge needs a parent too")

    def __contains__(self, key: str) -> bool:
        return key in self.values

    def get(self, key: str) -> str | None:
        return self.values.get(key)

    def version(self) -> int:
        value = self.values.get("version", "1")
        if not VERSION.match(value):
            self.fail("metadata.version", f"{value[:32]!r} is not a positive integer below 10^9")
        return int(value)

    def number(self, key: str) -> float | None:
        if key not in self:
            return None
        try:
            return float(self.values[key])
        except ValueError:
            self.fail(f"metadata.{key}", f"{self.values[key]!r} is not a number")

    def time(self, key: str) -> datetime:
        try:
            value = datetime.fromisoformat(self.values[key])
        except ValueError:
            self.fail(f"metadata.{key}", f"{self.values[key]!r} is not an ISO date-time")
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)

    def choice(self, key: str, choices: tuple, default: str) -> str:
        value = self.values.get(key, default)
        if value not in choices:
            self.fail(f"metadata.{key}", f"{value!r} is not one of {', '.join(choices)}")
        return value

    def edit(self) -> SkillEdit | None:
        """The edit that made this version, from the ``edit-*`` keys (all or none of the required ones)."""
        if not any(k.startswith("edit-") for k in self.values):
            return None
        for key in ("edit-operator", "edit-target", "edit-created"):
            if key not in self:
                self.fail(f"metadata.{key}", "missing (other edit-* keys are present)")
        if "edit-diagnosis" in self:
            try:
                json.loads(self.values["edit-diagnosis"])
            except json.JSONDecodeError:
                self.fail("metadata.edit-diagnosis", "not valid JSON")
        return SkillEdit(operator=self.choice("edit-operator", OPERATORS, ""), target=self.values["edit-target"],
                         partner=self.get("edit-partner"), diagnosis=self.get("edit-diagnosis"),
                         gate=self.choice("edit-gate", GATES, "ungated"), score_before=self.number("edit-score-before"),
                         score_after=self.number("edit-score-after"), created_at=self.time("edit-created"), library="")


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
