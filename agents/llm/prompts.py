"""The prompts the framework itself sends to a world's LLM: skill rewrites at births and the diagnoser's verdicts.

A world's agents are prompted by the world (each role's frozen system prompt, the text the acting role
reads). The framework adds prompts of its own: the exploit rewrite (one more general skill for a rich
agent's role), the explore rewrite (a worked example from a failure: what the agent was given, what it
wrote, the correct output) and the LLM diagnoser's short form (a JSON verdict on a blamed skill). A
weak model copies a *shown* format far more reliably than it follows a described one, so the explore
rewrite and the diagnoser each carry a worked demonstration.

Each role's rewrites are shown that role's own format: a multi-role world's demonstrations are made per role from
the role's own lines (a worked example of the role for the explore rewrite; the role's lines, one of them written
as the answer, for the exploit rewrite), so a router's child is not shown a calculator's line. A rewrite that
copies the framework's own words back (the system line, or the ask's framing) is no skill line: it is refused
(:meth:`Prompts.echoes`).

These prompts belong to the world (``prompts`` on its text task: scenarios/text/world.py, or
scenarios/wordmath.py's own), because any demonstration is task text: a world's agents shown another
world's worked example copy it (routers born holding an arithmetic example answer ``3 + 2`` to
``Sentiment: positive``). The defaults here contain nothing of any one task: their demonstrations are
made from the world's own material (its first worked example, its role names) by :meth:`Prompts.resolve`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from agents.backends import Prompt
from agents.backends.base import example
from skills.editor import SHORT_SYSTEM

REWRITE_SYSTEM = ("You improve the skills of an assistant. Reply with exactly one new skill: one short line, "
                  "no preamble.")
EXPLOIT_ASK = "Role: {role} Current skills: {skills} Write one more general skill that would help in this role."
EXPLORE_ASK = "Task: {given} | Wrote: {wrote} | Correct: {correct} | Write a worked example."
REWRITE_STOP = ("\n", "|")
"""A rewrite ends at a line break or at ``|``, the separator the asks put between their fields and between a role's
current skills: a line cannot hold it, and a weak model that goes on past its line writes the ask's next field
(``... => Answer: 5 | Write a worked example.``), which would otherwise become part of the skill."""


@dataclass(frozen=True)
class Prompts:
    """What the framework asks the world's model, and the worked demonstrations it shows with it.

    ``exploit_ask`` is formatted with ``role`` (the role's frozen prompt) and ``skills`` (its lines);
    ``explore_ask`` with ``given``, ``wrote`` and ``correct``. A demonstration is one string (shown to every
    role's rewrites: the world's choice), a dict role -> string (each role's own; a role missing from it is shown
    none), or ``None``: each role's own, made from the role's lines when the policy starts (:meth:`resolve`);
    ``""`` shows none. A world sets its own as ``TextWorld.prompts``.

    Args:
        rewrite_system: The system line of every skill rewrite at a birth.
        exploit_ask: The ask of an exploit birth (a rich agent's child): one more general skill for the role.
        explore_ask: The ask of an explore birth (from a failure): a worked example of what was correct.
        explore_demo: A worked explore rewrite shown with the ask: one string for every role, a dict role -> string,
            or None (each role's own, made from its lines).
        exploit_demo: A worked exploit rewrite, in the same three forms.
        diagnose_system: The system line of the skill diagnoser's short form.
        diagnose_demo: Worked verdicts shown to the diagnoser (None: made from the world's role names).
    """

    rewrite_system: str = REWRITE_SYSTEM
    """The system line of every skill rewrite at a birth."""
    exploit_ask: str = EXPLOIT_ASK
    """An exploit birth's ask, formatted with ``role`` (its frozen prompt) and ``skills`` (its lines)."""
    explore_ask: str = EXPLORE_ASK
    """An explore birth's ask, formatted with ``given`` (the task), ``wrote`` (the failed output) and ``correct``."""
    explore_demo: str | dict[str, str] | None = None
    """A worked explore rewrite, as demonstration turns (``example: <ask> => <new line>``)."""
    exploit_demo: str | dict[str, str] | None = None
    """A worked exploit rewrite (``example: <ask with some of the role's lines> => <another of its lines>``)."""
    diagnose_system: str = SHORT_SYSTEM
    """The system line of the skill diagnoser's short form."""
    diagnose_demo: str | None = None
    """Worked verdicts of the diagnoser's short form (skills/editor.py ``LLMDiagnoser.short_prompt``)."""

    def diagnosis(self, case_line: str) -> Prompt:
        """The diagnoser's ask for one case (skills/editor.py ``LLMDiagnoser.short_prompt``): its system line and
        worked verdicts, room for one verdict.

        Args:
            case_line: The case to judge, in one line.

        Returns:
            The prompt (``agents.backends.base.Prompt``), at most 96 tokens of answer.
        """
        return Prompt(self.diagnose_system, self.diagnose_demo, case_line, max_tokens=96)

    def rewrite(self, kind: Literal["explore", "exploit"], role: str, fields: dict, **prompt) -> Prompt:
        """The rewrite ask of ``kind`` for a line of ``role``, its ask formatted with ``fields`` (explore: given,
        wrote, correct; exploit: role, skills), shown the role's own demonstration; ``prompt``: the Prompt's
        max_tokens, temperature, seed."""
        ask, demo = (self.explore_ask, self.explore_demo) if kind == "explore" else (self.exploit_ask, self.exploit_demo)
        shown = demo if isinstance(demo, str) else (demo or {}).get(role, "")
        return Prompt(self.rewrite_system, shown, ask.format(**fields), stop=REWRITE_STOP, **prompt)

    def echoes(self, line: str) -> bool:
        """Whether a rewrite's line copies the framework's own words (part of the system line, or an ask's framing
        such as ``Task:``) instead of writing a skill: a weak model shown no format does."""
        framing = [ask.split("{", 1)[0].strip() for ask in (self.explore_ask, self.exploit_ask)]
        return line in self.rewrite_system or any(f and line.startswith(f) for f in framing)

    def resolve(self, roles, pool: dict[str, list[tuple[float, list[str]]]]) -> Prompts:
        """These prompts with every ``None`` demonstration made from the world, per role.

        Args:
            roles: The world's roles (``scenarios.text.Role``).
            pool: Role -> groups ``(p, [lines])`` of skill lines (``TextWorld.skill_pool()``).

        Returns:
            A copy with ``explore_demo`` and ``diagnose_demo`` filled in where they were None.
        """
        out = self
        llm = [r for r in roles if not r.tool]
        if out.explore_demo is None:
            out = replace(out, explore_demo={r.name: explore_demo({r.name: pool.get(r.name, [])}, self.explore_ask)
                                             for r in llm})
        if out.exploit_demo is None:
            out = replace(out, exploit_demo={r.name: exploit_demo(r.frozen, pool.get(r.name, []), self.exploit_ask)
                                             for r in llm})
        if out.diagnose_demo is None:
            out = replace(out, diagnose_demo=diagnose_demo([r.name for r in roles if not r.tool]))
        return out


def explore_demo(pool: dict[str, list[tuple[float, list[str]]]], ask: str = EXPLORE_ASK) -> str:
    """The explore rewrite worked once on the world's own first worked example (``example: X => Y`` whose
    output is not a yes/no wake-up answer): asked with X given, nothing written and Y correct, it answers
    with that line. "" when the pool has no worked example (then no demonstration is shown)."""
    for groups in pool.values():
        for _, lines in groups:
            for line in lines:
                shown = example(line)
                if shown is not None and shown[1].strip().lower() not in ("yes", "no"):
                    given, correct = shown
                    return f"example: {ask.format(given=given, wrote='(empty)', correct=correct)} => {line}"
    return ""


def exploit_demo(frozen: str, groups: list[tuple[float, list[str]]], ask: str = EXPLOIT_ASK) -> str:
    """The exploit rewrite worked once on a role's own lines (wake-up answers aside): asked with its first lines
    as the current skills, it answers with its last. "" when the role has no such line."""
    lines = [line for _, group in groups for line in group
             if (shown := example(line)) is None or shown[1].strip().lower() not in ("yes", "no")]
    if not lines:
        return ""
    current = " | ".join(lines[:-1][:3]) or "(none)"
    return f"example: {ask.format(role=frozen, skills=current)} => {lines[-1]}"


def diagnose_demo(roles: list[str]) -> str:
    """Three worked verdicts in the short form, naming the world's own first LLM role (one per failure
    shape: an unparsable output revised, a harmful skill pruned, a cut-off output revised); the outputs
    shown are placeholders, not any task's."""
    if not roles:
        return ""
    r = roles[0]
    return "\n".join([
        f'example: Blamed {r}-example-1. Step 0: {r} -> invalid_output "??". => {{"failure": "invalid_output", '
        f'"step": 0, "action": "revise", "target": "{r}-example-1"}}',
        f'example: Blamed {r}-rule-2. Step 0: {r} -> ok "(output)". => {{"failure": "harmful_skill", "step": 0, '
        f'"action": "prune", "target": "{r}-rule-2"}}',
        f'example: Blamed {r}-example-3. Step 0: {r} -> timeout "(cut off". => {{"failure": "timeout", "step": 0, '
        f'"action": "revise", "target": "{r}-example-3"}}',
    ])
