"""The edit loop every scenario with a skill library runs: evidence window, budget, diagnoses, candidate
edits, size checks, the gate, apply, checkpoint.

A scenario supplies only what is its own (:class:`World`):

* its **rollouts**: (question, [Rollout] * agents.group) groups, handed to :meth:`EditLoop.observe`
  once a round;
* its **evaluator**: ``evaluate(skills, questions, seeds) -> [n]`` scores of a library on the fixed
  validation ``questions`` (skills/gate.py), and optionally ``heldout(skills) -> float``, the same on
  problems the gate never sees;
* its **edit writer**: ``write(diagnosis, trace, rng) -> Edit | None``, the new text an edit asks for;
  and, for ``skills.credit = "random"``, ``draw(rng, n) -> [(Diagnosis, Trace)]``, random edits.

The loop keeps the rollouts since the last accepted edit (at most ``skills.window`` rounds: older ones
ran another library), blames (reading, where the scenario can, which line the failed outputs imitate:
skills/imitation.py) and diagnoses (skills/evolve.py), writes at most ``budget`` edits
(``skills.max_edits`` by default), refuses a candidate that breaks a size limit or empties the library
(skills/limits.py) before any validation run, counts an accepted edit that empties a role, gates the rest one at a time (skills/gate.py), and on an accept clears the
window. Every accepted edit records its validation gain and, with ``heldout``, its held-out gain: the
pair that shows a validation set over-fitted by many passes (:meth:`EditLoop.report`).
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from skills.config import SkillsConfig
from skills.credit import Rollout
from skills.editor import Diagnosis, Diagnoser, RuleDiagnoser
from skills.evolve import blame
from skills.gate import GateConfig, GateResult, validate
from skills.library import Edit, Skill, SkillError, SkillLibrary
from skills.limits import Limits, emptied
from skills.shapley import library_utility
from skills.workflow import Trace


@dataclass
class World:
    """What a scenario gives the loop (see the module's docstring)."""

    evaluate: Callable[[list[Skill], np.ndarray, np.ndarray], np.ndarray]
    questions: np.ndarray  # [n] the fixed validation questions
    seeds: np.ndarray  # [n] their seeds
    write: Callable[[Diagnosis, Trace, np.random.Generator], Edit | list[Edit] | None]
    draw: Callable[[np.random.Generator, int], list[tuple[Diagnosis, Trace | None]]] | None = None
    heldout: Callable[[list[Skill]], float | np.ndarray] | None = None
    """A library's held-out score, or its [n] per-problem scores (then an accepted edit's held-out gain is paired
    and carries its standard error: ``heldout_worse_accepted`` counts those more than one standard error worse)."""
    gated: Callable[[Diagnosis, GateResult, list[Skill]], None] | None = None
    """Called after each gated edit with the candidate library (an accepted one's holders change, say)."""
    propose: Callable[["Pass"], list[Diagnosis]] | None = None
    """Diagnoses the scenario's writer adds to a pass once the credit's edits are gated (it reads what they did, the
    pass so far), outside the budget (recsys: the reweight towards a tuned baseline); ``write`` may answer one with
    several edits, gated as one candidate. An accepted one keeps the credit's evidence window: it was not drawn
    from that evidence, and emptying the window for it would cost the credit the rounds it was still gathering
    about the skills the edit left alone."""
    gate: Callable[[Diagnosis], GateConfig | None] | None = None
    """A stricter gate for some diagnoses (None: ``skills``' own): recsys's births, many candidates a pass, each
    tested at a confidence that keeps the chance admissions a run makes few."""
    imitation: Callable[[list[tuple[Trace, int]]], list[dict[str, float]]] | None = None
    """What a failed step's output imitates, per line its prompt carried (skills/imitation.py ``Read``): a blame the
    failed outputs do not bear out moves to the line they imitate (a scenario whose model can score text; used while
    ``skills.imitation`` is on)."""


@dataclass
class Pass:
    """What one edit pass did."""

    accepted: int = 0
    rejected: int = 0
    diagnoses: list[Diagnosis] = field(default_factory=list)  # of the gated edits


class EditLoop:
    def __init__(self, library: SkillLibrary, skills: SkillsConfig, world: World, credit: str | None = None,
                 diagnoser: Diagnoser | None = None, fallback: Diagnoser | None = None):
        """``credit`` (default ``skills.credit``) and ``diagnoser`` (default: the rule diagnoser; an LLM one
        with the rule one as ``fallback``)."""
        self.library, self.cfg, self.world = library, skills, world
        self.credit = credit or skills.credit
        self.rule = RuleDiagnoser(skills.diagnosis_config())
        self.diagnoser, self.fallback = diagnoser or self.rule, fallback
        self.limits = Limits.of(skills)
        self.window: list[list[tuple]] = []  # per round: (question, [Rollout] * G), since the last accepted edit
        self.counts = collections.Counter()
        self.gains: list[dict] = []  # per accepted edit: what, validation gain, held-out gain
        self.utility: dict[str, float] = {}  # memory_shapley: each skill's Shapley value from the last pass

    # --- evidence ------------------------------------------------------------------------------
    def observe(self, groups: list) -> None:
        """One round's (question, rollouts) groups join the window (the oldest round leaves past ``skills.window``)."""
        self.window = (self.window + [groups])[-self.cfg.window:]

    def evidence(self) -> list:
        """The window's groups, oldest first."""
        return [g for groups in self.window for g in groups]

    def diagnoses(self, rng: np.random.Generator, budget: int) -> list[tuple[Diagnosis, Trace | None]]:
        """At most ``budget`` (diagnosis, the trace it read) pairs, each target once."""
        if budget <= 0 or self.credit == "none":
            return []
        if self.credit == "random":
            if self.world.draw is None:
                raise ValueError("skills.credit = 'random': this scenario draws no random edits")
            return self.world.draw(rng, budget)[:budget]
        utility = library_utility(self.library.current(), self.world.evaluate, self.world.questions, self.world.seeds,
                                  self.cfg.shapley, rng) if self.credit == "memory_shapley" else None
        self.utility = utility.values if utility is not None else self.utility  # what retrieval reads (skills/shapley.py)
        read = self.world.imitation if self.cfg.imitation else None
        found = blame(self.evidence(), self.credit, self.library, self.cfg, self.diagnoser, self.fallback, utility, read)
        self.counts["diagnoses_by_diagnoser"] += found.by_diagnoser
        self.counts["diagnoses_by_fallback"] += found.by_fallback
        if read is not None:
            self.counts["blame_moved_by_imitation"] += found.moved
            self.counts["blame_unread_by_imitation"] += found.unread
        return [(d, c.trace) for d, c in zip(found.diagnoses, found.cases)][:budget]

    # --- one pass ------------------------------------------------------------------------------
    def run(self, rng: np.random.Generator, budget: int | None = None) -> Pass:
        """Diagnose, write, check and gate at most ``budget`` edits (default ``skills.max_edits``), one at a time."""
        out = Pass()
        budget = self.cfg.max_edits if budget is None else budget

        def todo():  # the scenario's own proposals come after the credit's, and see what they did
            yield from ((d, trace, False) for d, trace in self.diagnoses(rng, budget))
            if self.world.propose is not None and self.credit != "none" and budget > 0:
                yield from ((d, None, True) for d in self.world.propose(out))

        for d, trace, own in todo():
            edit = self.world.write(d, trace, rng)
            if edit is None:
                self.counts["edits_unwritten"] += 1
                continue
            edits = edit if isinstance(edit, list) else [edit]
            try:
                current = self.library.current()
                _, candidate = self.library.plan(edits)
            except SkillError:  # e.g. a merge whose name is taken: the edit is not written
                self.counts["edits_invalid"] += 1
                continue
            if problem := self.limits.problem(current, candidate):
                self.counts[f"edits_refused_{problem}"] += 1
                continue
            result, _ = validate(self.library, edits, self.world.evaluate, self.world.questions, self.world.seeds,
                                 (self.world.gate and self.world.gate(d)) or self.cfg.gate_config())
            out.diagnoses.append(d)
            self.counts["edits_proposed"] += 1
            if result.accepted:
                out.accepted += 1
                self.counts["edits_accepted"] += 1
                self.counts["roles_emptied"] += len(emptied(current, candidate))  # allowed, never unnoticed
                self._gain(d, result, current, candidate)
                if not own:  # the evidence was about the library before this edit
                    self.window = []
            else:
                out.rejected += 1
                self.counts["edits_rejected"] += 1
            if self.world.gated is not None:
                self.world.gated(d, result, candidate)
        return out

    def _gain(self, d: Diagnosis, result: GateResult, before: list[Skill], after: list[Skill]) -> None:
        row = {"edit": f"{d.action} {d.target}", "rule": result.rule, "p": round(result.p, 4),
               "validation_gain": result.delta}
        if self.world.heldout is not None:  # a float, or per-problem scores: then paired, with their standard error
            diff = np.asarray(self.world.heldout(after), dtype=float) - np.asarray(self.world.heldout(before), dtype=float)
            row["heldout_gain"] = float(diff.mean())
            if diff.size > 1:
                row["heldout_se"] = float(diff.std(ddof=1) / np.sqrt(diff.size))
        self.gains.append(row)

    # --- the summary and checkpoints -----------------------------------------------------------
    def report(self) -> dict:
        """Edit counts, and the accepted edits' summed validation gain against their held-out gain (with per-problem
        held-out scores, also how many accepted edits lowered it by more than one standard error)."""
        out = {k: int(v) for k, v in sorted(self.counts.items())}
        out["validation_gain_accepted"] = round(float(sum(g["validation_gain"] for g in self.gains)), 6)
        if self.world.heldout is not None:
            out["heldout_gain_accepted"] = round(float(sum(g["heldout_gain"] for g in self.gains)), 6)
            out["heldout_worse_accepted"] = sum(g["heldout_gain"] < -g["heldout_se"] for g in self.gains if "heldout_se" in g)
        return out

    def state_dict(self, encode: Callable[[Rollout], tuple] | None = None) -> dict:
        """The window (rollouts as ``encode(r)``: default reward and trace state), counts and gains."""
        encode = encode or (lambda r: (r.reward, r.trace.state_dict()))
        return {"window": [[(q, [encode(r) for r in rs]) for q, rs in groups] for groups in self.window],
                "counts": dict(self.counts), "gains": [dict(g) for g in self.gains], "utility": dict(self.utility)}

    def load_state_dict(self, state: dict, decode: Callable[..., Rollout] | None = None) -> None:
        decode = decode or _rollout
        self.window = [[(q, [decode(*r) for r in rs]) for q, rs in groups] for groups in state["window"]]
        self.counts = collections.Counter(state.get("counts", {}))
        self.gains = [dict(g) for g in state.get("gains", [])]
        self.utility = dict(state.get("utility", {}))


def _rollout(reward: float, trace_state: dict) -> Rollout:
    t = Trace()
    t.load_state_dict(trace_state)
    return Rollout(reward, t)
