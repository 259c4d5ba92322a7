r"""``rods``: keep rollouts where the reward still varies; retire what is mastered or hopeless.

A group-relative update learns nothing from a group whose rollouts all score the same (zero
advantage), so rollouts are best spent on tasks whose progress reward varies. The sampler keeps a
buffer of ``capacity`` live tasks, drawn with probability proportional to their score::

    score(t) = Var(rewards of t)        after min_tries tries (progress rewards in [0, 1])
             = 1/4                      before, or while it has only scored 0 and is not yet hopeless:
                                        the largest variance in [0, 1], so the task is tried until judged

and retires a task (for good) once it is

    mastered   mean reward >= ``mastered`` after min_tries tries
    hopeless   every reward 0 after ``hopeless`` tries
    flat       variance < ``min_variance`` after min_tries tries, mean in between (nothing to contrast)

Freed places are refilled from the scenario's tasks in order, and once those run out, by isomorphic
variants (``variant(task, rng) -> task``, the scenario's) of the live task with the highest score:
new instances of what is being learned, so it is learned and not memorised.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from market.strict import STRICT

NEEDS = ("tasks", "variant", "progress")
"""An isomorphic ``variant`` of a task and a ``progress`` reward in [0, 1] (its variance is a task's score)."""
PRIOR = 0.25


class Exhausted(RuntimeError):
    """Every task is retired and no live one is left to vary: nothing whose reward still varies."""


@dataclass(config=STRICT)
class Config:
    capacity: int = Field(64, ge=1)
    """Live tasks kept in the buffer."""
    min_tries: int = Field(4, ge=2)
    """Rewards seen before a task's mean and variance are trusted."""
    mastered: float = Field(0.9, gt=0, le=1)
    """Retire a task whose mean reward reaches this."""
    hopeless: int = Field(8, ge=1)
    """Retire a task after this many tries that all scored 0."""
    min_variance: float = Field(0.01, ge=0)
    """Retire a task whose reward variance stays below this (its groups carry no advantage)."""


class Rods:
    def __init__(self, tasks, variant=None, cfg: Config | None = None):
        self.cfg, self.variant = cfg or Config(), variant
        self.pool = list(tasks)  # not yet in the buffer, in the scenario's order
        self.buffer: list = []
        self.stats: dict = {}  # task -> [tries, sum, sum of squares]
        self.retired: dict = {}  # task -> "mastered" | "hopeless" | "flat"

    def score(self, task) -> float:
        n, s, ss = self.stats.get(task, (0, 0.0, 0.0))
        unjudged = n < self.cfg.min_tries or (ss == 0 and n < self.cfg.hopeless)
        return PRIOR if unjudged else max(ss / n - (s / n) ** 2, 0.0)

    def verdict(self, task) -> str | None:
        n, s, ss = self.stats.get(task, (0, 0.0, 0.0))
        if ss == 0:
            return "hopeless" if n >= self.cfg.hopeless else None
        if n < self.cfg.min_tries:
            return None
        if s / n >= self.cfg.mastered:
            return "mastered"
        return "flat" if self.score(task) < self.cfg.min_variance else None

    def sample(self, rng: np.random.Generator, n: int) -> list:
        self._refill(rng)
        if not self.buffer:
            raise Exhausted("rods: every task is retired (mastered, hopeless or flat) and there is no "
                            "variant to make")
        w = np.maximum([self.score(t) for t in self.buffer], 1e-12)
        return [self.buffer[i] for i in rng.choice(len(self.buffer), size=n, p=w / w.sum())]

    def update(self, task_ids, rewards) -> None:
        for task, r in zip(task_ids, rewards):
            st = self.stats.setdefault(task, [0, 0.0, 0.0])
            st[0], st[1], st[2] = st[0] + 1, st[1] + float(r), st[2] + float(r) ** 2
        for task in dict.fromkeys(task_ids):
            reason = self.verdict(task)
            if reason and task not in self.retired:
                self.retired[task] = reason
                if task in self.buffer:
                    self.buffer.remove(task)

    def _refill(self, rng: np.random.Generator) -> None:
        known = lambda t: t in self.retired or t in self.buffer  # noqa: E731
        while len(self.buffer) < self.cfg.capacity:
            if self.pool:
                task = self.pool.pop(0)
            elif self.variant is not None and self.buffer:
                task = self.variant(max(self.buffer, key=self.score), rng)
                if known(task) or task in self.stats:
                    return  # the variants have run dry
            else:
                return
            if not known(task):
                self.buffer.append(task)

    def state_dict(self) -> dict:
        return {"pool": list(self.pool), "buffer": list(self.buffer), "retired": dict(self.retired),
                "stats": {t: list(s) for t, s in self.stats.items()}}

    def load_state_dict(self, state: dict) -> None:
        self.pool, self.buffer, self.retired = list(state["pool"]), list(state["buffer"]), dict(state["retired"])
        self.stats = {t: list(s) for t, s in state["stats"].items()}


SAMPLER = Rods
