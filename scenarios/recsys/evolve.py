"""One evolution iteration of a skill library: rollouts -> credit -> diagnosis -> edit -> gate.

An :class:`Arm` is one library evolved one way (``credit``, ``skills.credit`` for the main arm):

* ``grse``      group-relative credit, ``presence`` the presence-based baseline (the blame step
                every scenario with a library shares: skills/evolve.py);
* ``random``    no credit: random skills get random edits;
* ``none``      no edit passes: the library stays as it is.

All share everything else, set by the ``[skills]`` section (skills/config.py):
the questions and rollout seeds of each iteration, the rule diagnoser, the edit
writer (:mod:`scenarios.recsys.edits`), the budget (``max_edits`` gated edits
per pass) and the validation gate (skills/gate.py): a candidate library
replaces the current one only if the mean NDCG@k of the validation users does
not drop by more than ``gate_delta`` (a prune: by more than that plus ``prune_se``
standard errors of the paired differences, so the smaller of two libraries the
validation users cannot tell apart is kept).
Edits are gated one at a time, so the validation NDCG of the current library
never decreases, but by a prune within that tolerance.

Credit is fitted on the rollouts of the *current* library: up to ``window``
iterations of them, cleared whenever an edit is accepted (older rollouts ran
another library).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scenarios.recsys import edits, ops, pipeline as P
from scenarios.recsys.config import Config
from scenarios.recsys.data import VALIDATION
from skills import Rollout, RuleDiagnoser, SkillError, SkillLibrary, SkillsConfig, validate
from skills.evolve import blame
from skills.workflow import Trace

CREDITS = ("grse", "presence", "random", "none")


@dataclass
class Iteration:
    """What one iteration did (the rollouts are the main arm's episodes in the run database)."""

    users: np.ndarray  # [Q*G] the question of each rollout
    ndcg: np.ndarray  # [Q*G]
    accepted: int = 0
    rejected: int = 0
    diagnoses: list = field(default_factory=list)


class Arm:
    def __init__(self, credit: str, library: SkillLibrary, pipe: P.Pipeline, cfg: Config, skills: SkillsConfig,
                 agents: dict[str, str], evaluate=None):
        """``evaluate(skills, users) -> [B]`` scores a library for the gate (default: every applicable skill
        runs, as in team mode; market mode passes the team its market fields, with a ``key()`` that names
        that team, so that cached scores are reused only for the same team)."""
        if credit not in CREDITS:
            raise ValueError(f"credit {credit!r}: expected one of {CREDITS}")
        self.credit, self.library, self.pipe, self.cfg, self.agents = credit, library, pipe, cfg, agents
        self.skills = skills
        self.credit_cfg = skills.credit_config()
        self.diagnosis_cfg = skills.diagnosis_config(cfg.prune_below)
        self.gate_cfg = skills.gate_config()
        self.validation = pipe.data.users(VALIDATION)
        self.operators = ops.addable(cfg.catalogue)
        self.window: list[list[tuple[int, list[Rollout]]]] = []
        self._evaluate = evaluate or (lambda skills, users: pipe.evaluate(P.Compiled.of(skills), users))
        self._scores: dict[tuple, np.ndarray] = {}

    # ------------------------------------------------------------ scoring
    def evaluate(self, skills, users, seeds=None) -> np.ndarray:
        """[B] NDCG@k of a library on ``users``; cached by what the library runs (the gate's ``evaluate``)."""
        users = np.asarray(users)
        key = (P.Compiled.of(skills).key, users.tobytes(), getattr(self._evaluate, "key", lambda: None)(),
               getattr(self.pipe.learned, "version", None))  # a learned recall that moved scores anew
        if key not in self._scores:
            self._scores[key] = self._evaluate(skills, users)
        return self._scores[key]

    # ------------------------------------------------------------ one iteration
    def rollouts(self, questions: np.ndarray, seed: int) -> tuple[P.Compiled, P.Outcome, np.ndarray]:
        lib = P.Compiled.of(self.library.current())
        users = np.repeat(questions, self.skills.group)
        used = self.pipe.sample_use(lib, users, self.skills.p_use, np.random.default_rng(seed))
        return lib, self.pipe.run(lib, users, used), users

    def iterate(self, questions: np.ndarray, seed: int, budget: int | None = None) -> Iteration:
        """Team mode: G rollouts per question, then :meth:`learn` from them."""
        lib, out, users = self.rollouts(questions, seed)
        G = self.skills.group
        groups = [(int(q), [Rollout(float(out.reward[i * G + g]), P.trace(out, lib, i * G + g, self.agents))
                            for g in range(G)]) for i, q in enumerate(questions)]
        return self.learn(groups, seed, budget, Iteration(users, out.ndcg))

    def learn(self, groups: list, seed: int, budget: int | None = None, it: Iteration | None = None) -> Iteration:
        """Credit, diagnose, edit and gate at most ``budget`` edits (default ``max_edits``), one at a time; a
        budget of 0 (a round between edit passes) only adds the rollouts to the evidence."""
        self.window = (self.window + [groups])[-self.cfg.window:]
        rng = np.random.default_rng([seed, CREDITS.index(self.credit)])
        it = it or Iteration(np.zeros(0, dtype=np.int64), np.zeros(0))
        for d in self.diagnose(rng, self.skills.max_edits if budget is None else budget):
            edit = edits.propose(d, self.library, rng, self.operators)
            if edit is None:
                continue
            try:
                result, _ = validate(self.library, [edit], self.evaluate, self.validation,
                                     np.zeros(self.validation.size, dtype=np.int64), self.gate_cfg)
            except SkillError:  # e.g. a merge whose name is taken: the edit is not written
                continue
            it.diagnoses.append(d)
            if result.accepted:
                it.accepted += 1
                self.window = []  # the evidence was about the library before this edit
            else:
                it.rejected += 1
        return it

    def diagnose(self, rng: np.random.Generator, budget: int) -> list:
        """The iteration's diagnoses, at most ``budget``, each target once."""
        if budget <= 0 or self.credit == "none":
            return []
        if self.credit == "random":
            return edits.random_diagnoses(self.library, budget, self.agents, rng)
        groups = [g for it in self.window for g in it]
        rule = RuleDiagnoser(self.diagnosis_cfg)
        return blame(groups, self.credit, self.library, self.skills, self.cfg.prune_below, rule).diagnoses[:budget]

    # ------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict:
        return {"window": [[(q, [(r.reward, r.trace.state_dict()) for r in rollouts]) for q, rollouts in it]
                           for it in self.window]}

    def load_state_dict(self, state: dict) -> None:
        def rollout(reward, trace_state):
            t = Trace()
            t.load_state_dict(trace_state)
            return Rollout(reward, t)

        self.window = [[(q, [rollout(*r) for r in rollouts]) for q, rollouts in it] for it in state["window"]]

