"""Which skill lines an LLM agent's prompts carry, and the run's skill library they are skills of.

Every line of the pool, and every line a birth or an edit writes, is a skill of the run's library
(skills/library.py; named per role and kind by skills/catalogue.py). A row holds a list of skill names;
its wake-up prompt carries its general lines and its yes/no worked examples, its acting prompt its
general lines and its other worked examples (in the rollouts skill evolution reads, a training round or a frozen
probe by ``skills.evidence``, each with probability ``skills.p_use``: agents/llm/edit_pass.py).
"""

from __future__ import annotations

import contextlib
import functools

from agents.backends.base import example, skill
from skills.library import SkillLibrary
from skills.limits import tokens


class SkillLines:
    """Mixed into LLMPolicy: reads ``skills``, ``catalogue``, ``evolver``, ``roles``, ``role_index``, ``_population``
    and ``_evaluating``."""

    def attach(self, store, population=None) -> None:
        """The run's database (the runner's hook): the library named by the run id receives the skills
        named so far and, from then on, every round's new ones; ``population`` (the market's) gives
        the births' edits their agent ids. A resumed policy first drops the rows past its checkpoint."""
        self._population = population
        self.catalogue.attach(SkillLibrary(store.engine, store.run_id))

    def evolve_skills(self, skills, group: int, seed: int = 0) -> None:
        """The registry's hook for a run whose ``[skills]`` section edits the library (skills.credit other
        than none): group-relative credit over the ``group`` (agents.group) rollouts of each question, diagnosis,
        LLM-written edits and the gate (agents/llm/edit_pass.py)."""
        from agents.llm.edit_pass import SkillEvolver

        self.evolver = SkillEvolver(self, skills, group, seed)
        self.catalogue.check = functools.partial(self.line_problem, max_tokens=skills.skill_tokens)  # births' rewrites

    def line_problem(self, role: str, line: str, kind: str, max_tokens: int) -> str:
        """Why a written line (a birth's rewrite, skills/catalogue.py) fails the cheap check, "" if it passes: its
        size in tokens (skills.skill_tokens), that it reads back as one skill line, and the role's format (an LLM
        role; a worked example with both sides)."""
        if (n := tokens(line)) > max_tokens:
            return f"skill_tokens: {n} tokens, at most {max_tokens}"
        if skill(line) != line:
            return "format: not one skill line"
        index = self.role_index.get(role)
        if index is None or self.roles[index].tool:
            return f"role: {role!r} has no language model"
        shown = example(line)
        if kind in ("example", "wake") and (shown is None or not shown[0].strip() or not shown[1].strip()):
            return "format: an example needs an input and an output"
        return ""

    def learn(self, model) -> None:
        if self.evolver is not None:
            self.evolver.learn(model)

    def report(self) -> dict:
        """The run summary's skill-evolution counts (none without an evolver)."""
        return self.evolver.report() if self.evolver is not None else {}

    @contextlib.contextmanager
    def holding(self, skills: list[tuple[str, ...]], lines: dict[str, str]):
        """Rows hold ``skills`` (names; ``lines``: the text of names not in the catalogue, or new text for
        names in it) while inside: the gate's candidate library, played frozen."""
        saved = self.skills, self.catalogue.lines
        self.skills, self.catalogue.lines = list(skills), {**self.catalogue.lines, **lines}
        try:
            yield self
        finally:
            self.skills, self.catalogue.lines = saved

    @staticmethod
    def line_kind(line: str) -> str:
        """``rule`` (a general line), ``wake`` (a yes/no worked example: the wake-up prompt's) or ``example``."""
        shown = example(line)
        return "rule" if shown is None else "wake" if shown[1].strip().lower() in ("yes", "no") else "example"

    def _name(self, role: str, line: str, origin: dict) -> str:
        return self.catalogue.name(role, line, self.line_kind(line), origin)

    def lines(self, row: int) -> tuple[str, ...]:
        """The text of a row's skills, in order."""
        return tuple(self.catalogue.lines[name] for name in self.skills[row])

    def _agent(self, row: int) -> int | None:
        return None if self._population is None else int(self._population.ids[row])

    def _carried(self, row: int, wake: bool) -> list[str]:
        """The skills (names) a prompt carries: general lines always; worked examples whose output is
        yes/no only in the wake-up prompt, the other worked examples only when acting."""
        out = []
        for name in self.skills[row]:
            kind = self.line_kind(self.catalogue.lines[name])
            if kind == "rule" or (kind == "wake") == wake:
                out.append(name)
        return out

    def _skills(self, row: int, wake: bool) -> str:
        return "\n".join(self.catalogue.lines[name] for name in self._carried(row, wake))

    def _acting_skills(self, b: int, row: int, read: str) -> list[str]:
        """What row's acting prompt in world b carries when it reads ``read``: all its acting skills (or the ones
        the evolver's memory retrieves for it: ``skills.shapley.retrieve``), in a rollout skill evolution reads (a
        training round, or its probe: ``skills.evidence``) those the evolver draws for it (``skills.p_use``)."""
        carried = self._carried(row, wake=False)
        if self.evolver is not None:
            carried = self.evolver.retrieved(read, carried)
        if self.evolver is None or not self.evolver.contrasting(self._evaluating):
            return carried
        return self.evolver.applied(b, row, carried)
