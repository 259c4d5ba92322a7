"""Size limits on a library: no skill body, no role's skill set grows without bound, no role empties unnoticed.

ACE (Zhang et al. 2025) saw a context collapse from 18k to 122 tokens under naive rewriting, and the
opposite failure, a library that only grows, costs every prompt that carries it. So every candidate the
edit loop (skills/loop.py) would gate is checked first, before any validation run:

* ``skill_tokens``: a skill body of more tokens than ``skills.skill_tokens`` is refused;
* ``role_tokens``: the bodies of one role's current skills together (a bound on any agent's skill set,
  which holds some of them) may not pass ``skills.role_tokens``, unless the edit shrinks them;
* ``collapse``: an edit may not leave the library empty. An accepted edit that leaves a role without
  skills is allowed (a harmful last skill of a role may go: recsys runs a role without skills as a
  pass-through) but never unnoticed: the loop counts it (``roles_emptied``, :func:`emptied`).

A refused candidate is counted (``edits_refused_<limit>``) and not written. Tokens are counted as words
and punctuation marks (:func:`tokens`): no tokenizer is shared by every scenario, and this count is
within a small factor of a BPE tokenizer's on English text and rule text alike.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from skills.library import Skill

TOKEN = re.compile(r"\w+|[^\w\s]")


def tokens(text: str | None) -> int:
    """Words and punctuation marks in ``text``."""
    return len(TOKEN.findall(text or ""))


def role_tokens(skills: list[Skill]) -> dict[str | None, int]:
    out: dict[str | None, int] = defaultdict(int)
    for s in skills:
        out[s.role] += tokens(s.body)
    return out


@dataclass(frozen=True)
class Limits:
    skill_tokens: int
    role_tokens: int

    @classmethod
    def of(cls, skills) -> "Limits":
        return cls(skills.skill_tokens, skills.role_tokens)

    def body_problem(self, body: str) -> str:
        """"" if a body fits, else "skill_tokens"."""
        return "skill_tokens" if tokens(body) > self.skill_tokens else ""

    def problem(self, current: list[Skill], candidate: list[Skill]) -> str:
        """The limit a candidate library breaks against the current one ("" if none)."""
        old = {s.name: s for s in current}
        for s in candidate:
            if (s.name not in old or s.body != old[s.name].body) and self.body_problem(s.body):
                return "skill_tokens"
        before, after = role_tokens(current), role_tokens(candidate)
        for role, n in after.items():
            if n > self.role_tokens and n > before.get(role, 0):
                return "role_tokens"
        if current and not candidate:
            return "collapse"
        return ""


def emptied(current: list[Skill], candidate: list[Skill]) -> list[str | None]:
    """The roles that had skills in ``current`` and have none in ``candidate``."""
    left = {s.role for s in candidate}
    return sorted({s.role for s in current if s.role not in left}, key=str)
