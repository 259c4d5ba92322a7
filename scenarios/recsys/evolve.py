"""One evolution iteration of a recsys skill library: rollouts -> the edit loop of skills/loop.py.

An :class:`Arm` is one library evolved one way (``credit``, ``skills.credit`` for the main arm):

* ``grse``      group-relative credit, ``presence`` the presence-based baseline (the blame step
                every scenario with a library shares: skills/evolve.py);
* ``memory_shapley`` Shapley values of the clauses from subset replays (skills/shapley.py);
* ``random``    no credit: random skills get random edits;
* ``none``      no edit passes: the library stays as it is.

All share everything else, set by the ``[skills]`` section (skills/config.py): the questions and
rollout seeds of each iteration, the rule diagnoser, the budget (``max_edits`` gated edits per pass),
the evidence window (``window`` iterations, cleared on an accept) and the validation gate
(skills/gate.py) on the validation users' NDCG@k. What recsys gives the loop is its own: the rollouts
(the pipeline run on the questions), the evaluator (NDCG@k of a library on the validation users, and on
the test users for the held-out gain of each accepted edit) and the edit writer
(:mod:`scenarios.recsys.edits`: rule mutations, adds from the operator catalogue) and the floor
(:func:`scenarios.recsys.edits.floor`) and the births (:mod:`scenarios.recsys.births`: ``recsys.births`` new skills a
pass, bred from the library's clauses), through the same gate (every arm but ``none``): in a pass whose credit edits
changed nothing (the library settled for what the credit can see), the next step of each weighted role's weight
towards the tuned baselines' skills (seeds.tuned_blend: the best one, or a validated blend of two); in the run's
last edit pass, each role's baselines alone. Why the baseline alone
only at the end: it is a prune, which the one-standard-error rule lets through on a tie, so offered in any
earlier pass it could end a blend that the credit's later edits would have lifted above the baseline (on the
zoo's development worlds it did); as a final check it can only replace a library that validation does not tell
from the baseline (within one standard error, so a library a little above it on validation is replaced too).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from scenarios.recsys import births, edits, ops, pipeline as P, rules, seeds
from scenarios.recsys.config import Config
from scenarios.recsys.data import TEST, VALIDATION
from skills import Rollout, SkillLibrary, SkillsConfig
from skills.loop import EditLoop, World

CREDITS = ("grse", "presence", "random", "none", "memory_shapley")


@dataclass
class Iteration:
    """What one iteration did (the rollouts are the main arm's episodes in the run database)."""

    users: np.ndarray  # [Q*G] the question of each rollout
    ndcg: np.ndarray  # [Q*G]
    accepted: int = 0
    rejected: int = 0
    diagnoses: list = field(default_factory=list)


def rounds(exp) -> int:
    """The runner's rounds in a run (scenarios/run/runner.py): ``ceil(run.episodes / market.batch)``."""
    return -(-exp.run.episodes // exp.market.batch)


def last_pass(step: int, every: int, rounds: int) -> bool:
    """Whether round ``step`` (counted from 1) holds the run's last edit pass: it is due (``skills.every``) and no
    other is due before the run's last round."""
    return step % every == 0 and step + every > rounds


class Arm:
    def __init__(self, credit: str, library: SkillLibrary, pipe: P.Pipeline, cfg: Config, skills: SkillsConfig,
                 group: int, agents: dict[str, str], evaluate=None):
        """``group``: G rollouts per question (agents.group). ``evaluate(skills, users) -> [B]`` scores a library for the gate (default: every applicable skill
        runs, as in team mode; market mode passes the team its market fields, with a ``key()`` that names
        that team, so that cached scores are reused only for the same team)."""
        if credit not in CREDITS:
            raise ValueError(f"credit {credit!r}: expected one of {CREDITS}")
        self.credit, self.library, self.pipe, self.cfg, self.agents = credit, library, pipe, cfg, agents
        self.skills, self.group = skills, group
        self.validation = pipe.data.users(VALIDATION)
        self.operators = ops.addable(cfg.catalogue)
        self._evaluate = evaluate or (lambda skills, users: pipe.evaluate(P.Compiled.of(skills), users))
        self._scores: dict[tuple, np.ndarray] = {}
        test = pipe.data.users(TEST)
        self.baseline = frozenset(s[0] for s in seeds.tuned_blend(pipe.signals.tuned.best, pipe, self.validation))
        medians = {f: seeds.median(pipe.features[:, j]) for j, f in enumerate(rules.FEATURES)}
        self.births = births.Births(library, cfg.births, medians, agents)
        world = World(self.evaluate, self.validation, np.zeros(self.validation.size, dtype=np.int64),
                      write=self.write,
                      draw=lambda rng, n: [(d, None) for d in edits.random_diagnoses(self.library, n, agents, rng)],
                      heldout=lambda skills: float(self.evaluate(skills, test).mean()),
                      propose=lambda done: edits.floor(self.library, self.anchors(), agents, not done.accepted,
                                                       self.final) + self.births.propose(self._rng),
                      gate=lambda d: replace(skills.gate_config(), confidence=cfg.births_confidence)
                      if d.failure == births.BIRTH else None)
        self.final = False  # this pass is the run's last edit pass (set by :meth:`learn`)
        self._rng: np.random.Generator | None = None  # this pass's (births draw from it after the credit's edits)
        self.pass_seconds: list[float] = []
        self.loop = EditLoop(library, skills, world, credit=credit)

    def anchors(self) -> frozenset:
        """What the floor moves weight towards and keeps alone: the tuned blend's skills, and the current skills a birth
        wrote (admitted on validation evidence, as the blend was chosen on it; without them the floor's last check,
        which lets a library go for the blend alone at a cost of up to one standard error, would undo every birth
        whose gain is smaller than that)."""
        return self.baseline | births.born_names(self.library) if self.cfg.births else self.baseline

    def write(self, d, trace, rng):
        if d.failure == births.BIRTH:
            return self.births.write(d)
        return edits.propose(d, self.library, rng, self.operators, self.anchors())

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
        users = np.repeat(questions, self.group)
        used = self.pipe.sample_use(lib, users, self.skills.p_use, np.random.default_rng(seed))
        return lib, self.pipe.run(lib, users, used), users

    def iterate(self, questions: np.ndarray, seed: int, budget: int | None = None, final: bool = False) -> Iteration:
        """Team mode: G rollouts per question, then :meth:`learn` from them."""
        lib, out, users = self.rollouts(questions, seed)
        G = self.group
        groups = [(int(q), [Rollout(float(out.reward[i * G + g]), P.trace(out, lib, i * G + g, self.agents))
                            for g in range(G)]) for i, q in enumerate(questions)]
        return self.learn(groups, seed, budget, Iteration(users, out.ndcg), final)

    def learn(self, groups: list, seed: int, budget: int | None = None, it: Iteration | None = None,
              final: bool = False) -> Iteration:
        """The rollouts join the evidence; then one pass of the edit loop with at most ``budget`` edits (default
        ``max_edits``; 0: a round between edit passes only adds the rollouts to the evidence); ``final``: the run's
        last edit pass (:func:`last_pass`), where the floor also offers each role's baseline alone."""
        self.loop.observe(groups)
        self.final = final
        it = it or Iteration(np.zeros(0, dtype=np.int64), np.zeros(0))
        start = time.perf_counter()
        self._rng = np.random.default_rng([seed, CREDITS.index(self.credit)])
        done = self.loop.run(self._rng, budget)
        if budget is None or budget > 0:
            self.pass_seconds.append(time.perf_counter() - start)
        it.accepted, it.rejected, it.diagnoses = done.accepted, done.rejected, done.diagnoses
        return it

    def report(self) -> dict:
        """The loop's counts, and its accepted edits' validation gain against their test (held-out) gain."""
        return self.loop.report()

    # ------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict:
        return self.loop.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.loop.load_state_dict(state)
