"""The skill library: every version of every skill, and the edit that made each one.

A skill version is a row that never changes once written, and no row is ever
deleted. Every edit (add, revise, prune, merge) writes one new version, so
pruning is a version whose status is ``pruned`` and a merge is a version with
two parents. A candidate that the validation gate turns down is written too,
with status ``rejected``, beside the edit that carries its scores.

The *current* library is read off the version graph: a version is current if
it is ``active`` and no accepted version names it as a parent. A revise
therefore retires its parent, a prune ends its name, a merge retires both of
its parents. Several libraries share one database; a run's library is named by
the run's id.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone

from sqlalchemy import UniqueConstraint, inspect
from sqlmodel import Field, Session, SQLModel, select

from market.store import make_engine

STATUSES = ("active", "pruned", "rejected")
OPERATORS = ("add", "revise", "prune", "merge")
GATES = ("accepted", "rejected", "ungated")
NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")  # Agent Skills: lowercase letters, digits, single inner hyphens
MAX_NAME, MAX_DESCRIPTION = 64, 1024
RULE_FENCE = "```rule"


class SkillError(ValueError):
    """A bad skill or edit; the message names the skill and the field."""


class SkillEdit(SQLModel, table=True):
    __tablename__ = "skill_edit"

    id: int | None = Field(default=None, primary_key=True)
    library: str = Field(index=True)
    operator: str  # add | revise | prune | merge
    target: str  # the skill it changes (add: the new skill's name)
    partner: str | None = None  # merge: the skill merged into the target
    diagnosis: str | None = None  # JSON of the diagnosis that asked for it (skills/editor.py)
    gate: str = "ungated"  # accepted | rejected | ungated
    score_before: float | None = None  # mean validation score of the library it would replace
    score_after: float | None = None  # ... and of the candidate library
    created_at: datetime


class Skill(SQLModel, table=True):
    __tablename__ = "skill"
    __table_args__ = (UniqueConstraint("library", "name", "version"),)

    id: int | None = Field(default=None, primary_key=True)
    library: str = Field(index=True)
    name: str
    version: int  # 1, 2, ... per name; rejected versions use up their number too
    description: str
    body: str  # the instruction an LLM reads
    rule: str | None = None  # what the rule backend runs (agents/rules.py DSL)
    role: str | None = None  # the workflow role it belongs to
    status: str = "active"  # active | pruned | rejected
    parent_id: int | None = Field(default=None, foreign_key="skill.id")
    merge_parent_id: int | None = Field(default=None, foreign_key="skill.id")  # a merge's second parent
    edit_id: int | None = Field(default=None, foreign_key="skill_edit.id")
    extra: str | None = None  # JSON of other Agent Skills front-matter fields (license, ...), kept for export
    created_at: datetime

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"


class DiagnosisFailure(SQLModel, table=True):
    """A diagnosis a model gave that could not be used (skills/editor.py: unparsable, or naming an unknown
    failure type, action, step or skill), kept with its raw text; the rule diagnoser answered instead."""

    __tablename__ = "skill_diagnosis_failure"
    id: int | None = Field(default=None, primary_key=True)
    library: str = Field(index=True)
    skill: str  # the blamed skill version (name@version)
    output: str  # the model's raw text
    error: str  # why it was not used
    created_at: datetime


@dataclass
class Edit:
    """A proposed change. Content fields left ``None`` keep the target's (an ``add`` needs
    description and body; a merge without a body joins both bodies); ``rule=""`` drops the rule."""

    operator: str
    target: str
    partner: str | None = None
    name: str | None = None  # merge: the merged skill's name (default: the target's)
    description: str | None = None
    body: str | None = None
    rule: str | None = None
    role: str | None = None
    diagnosis: dict | None = None


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def check(field: str, value) -> str | None:
    """Why ``value`` is not a valid ``field`` of a skill, or None (Agent Skills rules for name, description)."""
    if field == "name":
        if not isinstance(value, str) or not NAME.match(value) or len(value) > MAX_NAME:
            return f"{value!r} must be 1-{MAX_NAME} lowercase letters, digits and single hyphens inside"
    elif field == "description":
        if not isinstance(value, str) or not value.strip():
            return "must be a non-empty string"
        if len(value) > MAX_DESCRIPTION:
            return f"{len(value)} characters, at most {MAX_DESCRIPTION}"
    elif field == "body":
        if not isinstance(value, str):
            return "must be a string"
        if any(line.strip() == RULE_FENCE for line in value.splitlines()):
            return f"a {RULE_FENCE!r} block belongs in the rule, not the body"
    elif field == "rule":
        if value is not None and (not isinstance(value, str) or not value.strip() or "```" in value):
            return "must be non-empty text without ``` fences"
    return None


def current_of(versions: list[Skill]) -> list[Skill]:
    """The versions in use: active, and not the parent of any accepted version."""
    consumed = {p for v in versions if v.status != "rejected"
                for p in (v.parent_id, v.merge_parent_id) if p is not None}
    return [v for v in versions if v.status == "active" and v.id not in consumed]


class SkillLibrary:
    """One named library in a database. Creates the skill tables on the engine if missing; ``create=False``
    (a read-only engine, commands that only read) creates nothing, and a database without them reads as
    an empty library."""

    def __init__(self, engine, name: str = "default", create: bool = True):
        if create:
            SQLModel.metadata.create_all(engine, tables=[SkillEdit.__table__, Skill.__table__,
                                                         DiagnosisFailure.__table__])
        self.engine, self.name = engine, name
        self._empty = not create and not inspect(engine).has_table(Skill.__tablename__)

    @classmethod
    def open(cls, url: str, name: str = "default") -> "SkillLibrary":
        return cls(make_engine(url), name)

    # ------------------------------------------------------------- reading
    def versions(self) -> list[Skill]:
        """Every version, in the order written."""
        if self._empty:
            return []
        return self._rows(Skill, select(Skill).where(Skill.library == self.name).order_by(Skill.id))

    def edits(self) -> dict[int, SkillEdit]:
        if self._empty:
            return {}
        return {e.id: e for e in self._rows(SkillEdit, select(SkillEdit).where(SkillEdit.library == self.name))}

    def current(self) -> list[Skill]:
        return current_of(self.versions())

    def diagnosis_failures(self) -> list[DiagnosisFailure]:
        if self._empty:
            return []
        query = select(DiagnosisFailure).where(DiagnosisFailure.library == self.name).order_by(DiagnosisFailure.id)
        return self._rows(DiagnosisFailure, query)

    def _rows(self, table, query) -> list:
        """``query``'s rows of ``table``; a stored value the row type cannot take (a foreign database's
        ``created_at = 'yesterday'``) is a :class:`SkillError` naming the table and column, not a traceback."""
        try:
            with Session(self.engine) as s:
                return list(s.exec(query).all())
        except (ValueError, TypeError, OverflowError) as err:
            first = " ".join(str(err).split())[:120]
            where = f"{table.__tablename__}.created_at" if first.startswith("Invalid isoformat") else table.__tablename__
            raise SkillError(f"library {self.name!r}: {where}: a stored value cannot be read ({first})") from None

    def record_failures(self, failures) -> None:
        """Write unusable diagnoses (skills/editor.py ``Malformed``: skill, output, error) in one transaction."""
        with Session(self.engine) as s:
            s.add_all(DiagnosisFailure(library=self.name, skill=f.skill, output=f.output, error=f.error,
                                       created_at=utcnow()) for f in failures)
            s.commit()

    def get(self, ref: str) -> Skill:
        """``name@version``, or ``name`` for its newest version that was not rejected."""
        return _find(self.versions(), ref, self.name)

    # ------------------------------------------------------------- editing
    def add(self, name: str, description: str, body: str, rule: str | None = None, role: str | None = None) -> Skill:
        """Shorthand for an ungated ``add`` edit."""
        return self.apply([Edit("add", name, description=description, body=body, rule=rule, role=role)])[0]

    def plan(self, edits: list[Edit]) -> tuple[list[Skill], list[Skill]]:
        """(new versions, candidate library) if ``edits`` were applied in order; nothing is written.

        New versions carry provisional negative ids (their parents' ids may be provisional too).
        """
        versions = self.versions()
        new: list[Skill] = []
        for edit in edits:
            skill = self._version_for(edit, versions)
            skill.id = -len(new) - 1
            new.append(skill)
            versions.append(skill)
        return new, current_of(versions)

    def apply(self, edits: list[Edit], gate=None) -> list[Skill]:
        """Write the edits and their versions in one transaction; return the new versions.

        ``gate`` (a :class:`skills.gate.GateResult`) decides their fate: rejected
        versions keep their content with status ``rejected``, and every edit
        records the gate's verdict and both scores.
        """
        new, _ = self.plan(edits)
        verdict = "ungated" if gate is None else ("accepted" if gate.accepted else "rejected")
        before, after = (None, None) if gate is None else (gate.before, gate.after)
        ids: dict[int, int] = {}
        with Session(self.engine, expire_on_commit=False) as s:
            for edit, planned in zip(edits, new):
                diagnosis = None if edit.diagnosis is None else json.dumps(edit.diagnosis)
                record = SkillEdit(library=self.name, operator=edit.operator, target=edit.target, partner=edit.partner,
                                   diagnosis=diagnosis, gate=verdict, score_before=before, score_after=after,
                                   created_at=planned.created_at)
                s.add(record)
                s.flush()
                row = Skill(**planned.model_dump(exclude={"id"}))
                row.parent_id = ids.get(row.parent_id, row.parent_id)
                row.merge_parent_id = ids.get(row.merge_parent_id, row.merge_parent_id)
                row.edit_id = record.id
                if verdict == "rejected":
                    row.status = "rejected"
                s.add(row)
                s.flush()
                ids[planned.id] = row.id
            s.commit()
            rows = [s.get(Skill, ids[p.id]) for p in new]
        return rows

    def _version_for(self, edit: Edit, versions: list[Skill]) -> Skill:
        """The version an edit writes, checked against the library as it stands in ``versions``."""
        if edit.operator not in OPERATORS:
            raise SkillError(f"edit of {edit.target}: operator {edit.operator!r} is not one of {OPERATORS}")
        current = {v.name: v for v in current_of(versions)}
        names = {v.name for v in versions}
        if edit.operator == "add":
            if edit.target in names:
                raise SkillError(f"add {edit.target}: name: already in library {self.name!r}")
            if edit.description is None or edit.body is None:
                raise SkillError(f"add {edit.target}: description and body are required")
            fields = dict(name=edit.target, description=edit.description, body=edit.body, rule=edit.rule or None,
                          role=edit.role)
            return self._new(fields, versions, None, None)
        if edit.target not in current:
            raise SkillError(f"{edit.operator} {edit.target}: not in the current library {self.name!r}")
        target = current[edit.target]
        fields = dict(name=target.name, description=target.description, body=target.body, rule=target.rule,
                      role=target.role)
        if edit.operator == "prune":
            return self._new(fields, versions, target, None, status="pruned")
        partner = None
        if edit.operator == "merge":
            if edit.partner not in current or edit.partner == edit.target:
                raise SkillError(f"merge {edit.target}: partner {edit.partner!r} is not another current skill")
            partner = current[edit.partner]
            fields["body"] = f"{target.body.rstrip()}\n\n{partner.body.lstrip()}"
            if edit.name is not None and edit.name != target.name:
                if edit.name in names:
                    raise SkillError(f"merge {edit.target}: name: {edit.name!r} already in library {self.name!r}")
                fields["name"] = edit.name
        for key in ("description", "body", "rule", "role"):
            if getattr(edit, key) is not None:
                fields[key] = getattr(edit, key)
        fields["rule"] = fields["rule"] or None
        return self._new(fields, versions, target, partner)

    def _new(self, fields: dict, versions: list[Skill], parent: Skill | None, partner: Skill | None,
             status: str = "active") -> Skill:
        for key in ("name", "description", "body", "rule"):
            problem = check(key, fields[key])
            if problem:
                raise SkillError(f"skill {fields['name']}: {key}: {problem}")
        version = 1 + max((v.version for v in versions if v.name == fields["name"]), default=0)
        return Skill(library=self.name, version=version, status=status, created_at=utcnow(),
                     parent_id=parent.id if parent else None, merge_parent_id=partner.id if partner else None,
                     **fields)


def _find(versions: list[Skill], ref: str, library: str) -> Skill:
    name, _, version = ref.partition("@")
    for v in reversed(versions):
        if v.name == name and (str(v.version) == version if version else v.status != "rejected"):
            return v
    raise SkillError(f"{ref}: no such skill version in library {library!r}")
