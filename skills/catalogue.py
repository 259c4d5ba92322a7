"""Skill lines as library skills: what an LLM agent's trainable part is made of (agents/llm/policy.py).

Each distinct (role, line) is one skill of the run's library (skills/library.py):

* ``name``: ``<role>-<kind>-<k>``, the role lowercase-hyphenated; ``kind`` is ``example`` (a worked
  example), ``wake`` (a yes/no wake-up example) or ``rule`` (a general line); ``k`` counts the
  role's lines of that kind in the order they first appear, so a run's names follow from its seed;
* ``description``: the line itself, whitespace collapsed, cut to 1024 characters;
* ``body``: the exact line; ``role``: the agent's role.

A new line is an ungated ``add`` edit whose diagnosis says where it came from: ``{"origin":
"pool"}`` (the lines newcomers draw, named when the policy is made), ``"seed"`` (a seeded agent's
line not in the pool), ``"exploit"`` / ``"explore"`` (a birth's rewrite, with the parent agent, its
skill-set version and skills, and the raw rewrite), ``"checkpoint"`` (a line held in a checkpoint
written before skills were a library). A birth's rewrite is checked before it is named (:attr:`Catalogue.check`:
its size in tokens, that it parses in the role's format) and its origin records ``"check": "passed"``, the
problem found, or ``"unchecked"`` where no check was set (a run without skill evolution); births are ungated
adds, never among the gated edits' accepted counts, and ``checks`` counts each outcome. Lines are named in memory at once; their edits
wait in ``pending`` until :meth:`Catalogue.flush` writes them to the attached library in one
transaction (the policy flushes at round boundaries only, after births).

Resume: ``marks`` (the largest skill and edit ids written) go into checkpoints with the rest of
the state; :meth:`Catalogue.attach` first removes the library's rows past them (a round cut off by
a kill, written after the checkpoint), so a resumed run ends with the library an uninterrupted one has.
"""

from __future__ import annotations

import collections
import re
from typing import Callable

from sqlmodel import Session, delete, func, select

from skills.library import (MAX_DESCRIPTION, MAX_NAME, DiagnosisFailure, Edit, Skill, SkillEdit, SkillError, SkillLibrary,
                            check)

KINDS = ("example", "wake", "rule")
BIRTHS = ("exploit", "explore")
"""Origins of a birth's rewrite: the lines a model wrote, checked (or marked unchecked) before they are named."""
ROLE_CHARS = MAX_NAME - len("-example-") - 6  # room for the kind and a six-digit count


def slug(role: str) -> str:
    """``role`` as the lowercase-hyphenated start of a skill name ("Word Extractor" -> "word-extractor")."""
    text = re.sub(r"[^a-z0-9]+", "-", role.lower()).strip("-")
    return text[:ROLE_CHARS].strip("-") or "agent"


def summary(line: str) -> str:
    """A line as a one-line description (at most 1024 characters)."""
    text = " ".join(line.split()) or "(an empty line)"
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 3] + "..."


TABLES = (Skill, SkillEdit, DiagnosisFailure)


def marks(library: SkillLibrary) -> tuple[int, ...]:
    """The largest id of each of a library's tables (TABLES): what a checkpoint has seen."""
    with Session(library.engine) as s:
        return tuple(int(s.exec(select(func.max(t.id)).where(t.library == library.name)).one() or 0) for t in TABLES)


def truncate(library: SkillLibrary, seen: tuple[int, ...]) -> None:
    """Remove a library's rows written after ``seen`` (:func:`marks` at a checkpoint; a checkpoint from
    before the failure table marks the first two tables only)."""
    with Session(library.engine) as s:
        for table, last in zip(TABLES, seen):
            s.execute(delete(table).where(table.library == library.name, table.id > last))
        s.commit()


class Catalogue:
    """The (role, line) -> skill name map of one policy, and the add edits not yet written."""

    def __init__(self):
        self.names: dict[tuple[str, str], str] = {}  # (role, line) -> skill name
        self.lines: dict[str, str] = {}  # skill name -> line
        self.count: collections.Counter = collections.Counter()  # name prefix -> lines named with it
        self.pending: list[dict] = []  # add edits not yet written: name, role, line, origin
        self.marks: tuple[int, ...] = (0, 0, 0)
        self.library: SkillLibrary | None = None
        self.check: Callable[[str, str, str], str] | None = None
        """``check(role, line, kind) -> problem`` ("" if fine) for a birth's rewrite (skills.limits, the role's
        format): set by the LLM policy when its skills evolve (agents/llm/lines.py); None: births are recorded as
        unchecked."""
        self.checks: collections.Counter = collections.Counter()  # births' rewrites: passed, failed, unchecked

    def name(self, role: str, line: str, kind: str, origin: dict) -> str:
        """The skill of ``line`` in ``role``; a line not seen before is named now and its add edit
        (``origin`` as the diagnosis) waits for the next flush."""
        if (role, line) in self.names:
            return self.names[role, line]
        if kind not in KINDS:
            raise SkillError(f"line {line!r}: kind {kind!r} is not one of {KINDS}")
        prefix = f"{slug(role)}-{kind}"
        name = f"{prefix}-{self.count[prefix] + 1}"
        for field, value in (("name", name), ("description", summary(line)), ("body", line)):
            problem = check(field, value)
            if problem:
                raise SkillError(f"skill {name}: {field}: {problem}")
        self.count[prefix] += 1
        self.names[role, line], self.lines[name] = name, line
        if origin.get("origin") in BIRTHS:
            problem = "unchecked" if self.check is None else (self.check(role, line, kind) or "passed")
            origin = {**origin, "check": problem}
            self.checks[problem if problem in ("passed", "unchecked") else "failed"] += 1
        self.pending.append({"name": name, "role": role, "line": line, "origin": dict(origin)})
        return name

    def reserve(self, role: str, kind: str) -> str:
        """A fresh name for a line of ``role`` that an edit pass proposes (skills/evolve.py): the count moves
        on whether or not the gate accepts it, since a rejected version keeps its name in the library."""
        prefix = f"{slug(role)}-{kind}"
        self.count[prefix] += 1
        return f"{prefix}-{self.count[prefix]}"

    def sync(self, library: SkillLibrary) -> None:
        """After a gated edit was written: the current library's lines are the catalogue (a revised
        skill reads its new body, a pruned one is gone, so a later birth that writes its old line names a
        new skill)."""
        current = [s for s in library.current() if s.role is not None]
        self.names = {(s.role, s.body): s.name for s in current}
        self.lines = {s.name: s.body for s in current}
        self.marks = marks(library)

    def attach(self, library: SkillLibrary) -> None:
        """Write to ``library`` from now on: drop its rows past this catalogue's marks, then flush."""
        truncate(library, self.marks)
        self.library = library
        self.flush()

    def flush(self) -> None:
        """Write the pending add edits (one transaction); without a library they keep waiting."""
        if self.library is None or not self.pending:
            return
        self.library.apply([Edit("add", p["name"], description=summary(p["line"]), body=p["line"], role=p["role"],
                                 diagnosis=p["origin"]) for p in self.pending])
        self.pending = []
        self.marks = marks(self.library)

    def state_dict(self) -> dict:
        return {"names": [[role, line, name] for (role, line), name in self.names.items()],
                "count": dict(self.count), "pending": [dict(p) for p in self.pending], "marks": list(self.marks),
                "checks": dict(self.checks)}

    def load_state_dict(self, state: dict) -> None:
        self.names = {(role, line): name for role, line, name in state["names"]}
        self.lines = {name: line for (_, line), name in self.names.items()}
        self.count = collections.Counter(state["count"])
        self.pending = [dict(p) for p in state["pending"]]
        self.marks = tuple(state["marks"])
        self.checks = collections.Counter(state.get("checks", {}))  # a checkpoint from before the checks: none
