r"""``scrl``: a curriculum of verifiable sub-problems, normalised per sub-problem, half of every draw.

The scenario splits a task into sub-problems it can verify, easiest first
(``subproblems(task) -> list[task]``); the task's ladder is those, then the task itself. Each task
stands on one rung and climbs when that rung's mean reward reaches ``advance`` over at least
``min_tries`` tries. A draw of n is half curriculum, half original::

    n // 2       the current rung of a uniformly drawn task        (curriculum)
    n - n // 2   uniformly drawn original tasks                     (what is finally judged)

so the policy keeps seeing the real tasks while it learns their parts. Sub-problems differ in
difficulty, so a reward is normalised among the rollouts of the same sub-problem (task id), not
over a fixed group of G (``agents.credit.advantages.class_advantage``, the learner's)::

    A_i = (r_i - mean_{j: id_j = id_i} r_j) / (std_{j: id_j = id_i} r_j + eps)
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from market.strict import STRICT

NEEDS = ("tasks", "subproblems")
"""A task's verifiable ``subproblems`` (judged by their outcome, solved or not)."""


@dataclass(config=STRICT)
class Config:
    advance: float = Field(0.8, gt=0, le=1)
    """Climb to the next rung when the current one's mean reward reaches this."""
    min_tries: int = Field(4, ge=1)
    """Tries of a rung before its mean counts."""


class Scrl:
    def __init__(self, tasks, subproblems, cfg: Config | None = None):
        self.cfg, self.subproblems = cfg or Config(), subproblems
        self.tasks = list(tasks)
        self.level = {t: 0 for t in self.tasks}  # rung each task stands on
        self.ladders: dict = {}  # task -> its sub-problems, then itself (the scenario's callable, called once)
        self.owners: dict = {}  # rung -> the tasks whose ladder holds it
        self.stats: dict = {}  # task id -> [tries, sum of rewards]

    def ladder(self, task) -> list:
        if task not in self.ladders:
            self.ladders[task] = list(self.subproblems(task)) + [task]
            for rung in self.ladders[task]:
                self.owners.setdefault(rung, []).append(task)
        return self.ladders[task]

    def current(self, task):
        rungs = self.ladder(task)
        return rungs[self.level[task]]

    def sample(self, rng: np.random.Generator, n: int) -> list:
        picks = [self.tasks[i] for i in rng.integers(len(self.tasks), size=n)]
        return [self.current(t) for t in picks[: n // 2]] + picks[n // 2:]

    def update(self, task_ids, rewards) -> None:
        for task, r in zip(task_ids, rewards):
            st = self.stats.setdefault(task, [0, 0.0])
            st[0], st[1] = st[0] + 1, st[1] + float(r)
        for rung in dict.fromkeys(task_ids):
            n, s = self.stats[rung]
            if n >= self.cfg.min_tries and s / n >= self.cfg.advance:
                for task in self.owners.get(rung, ()):
                    if self.current(task) == rung and self.level[task] < len(self.ladder(task)) - 1:
                        self.level[task] += 1

    def state_dict(self) -> dict:
        return {"level": dict(self.level), "ladders": {t: list(r) for t, r in self.ladders.items()},
                "stats": {t: list(s) for t, s in self.stats.items()}}

    def load_state_dict(self, state: dict) -> None:
        self.level = dict(state["level"])
        self.ladders, self.owners = {}, {}
        for task, rungs in state["ladders"].items():
            self.ladders[task] = list(rungs)
            for rung in rungs:
                self.owners.setdefault(rung, []).append(task)
        self.stats = {t: list(s) for t, s in state["stats"].items()}


SAMPLER = Scrl
