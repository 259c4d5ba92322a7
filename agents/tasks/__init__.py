"""Task samplers: which tasks the next round's rollouts are spent on (CREDIT_METHODS.md, batch B).

One interface (:class:`Sampler`): ``sampler = make("rods", tasks, variant=f)``; each round
``sampler.sample(rng, n)`` returns n task specs (the scenario runs G rollouts of each), and after
it ``sampler.update(task_ids, rewards)`` reports one reward per rollout. Tasks are opaque hashable
specs; everything a sampler needs to know about a task (an isomorphic variant of it, its
sub-problems) the scenario passes in as a callable. Every sampler saves and restores itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from typing import Protocol

import numpy as np

from agents.tasks import rods, scrl

NAMES = ("uniform", "rods", "scrl")


class Sampler(Protocol):
    def sample(self, rng: np.random.Generator, n: int) -> list[Hashable]: ...

    def update(self, task_ids: Sequence[Hashable], rewards: Sequence[float]) -> None: ...

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...


class Uniform:
    """Every task equally likely, drawn with replacement: the baseline the others are compared to."""

    def __init__(self, tasks):
        self.tasks = list(tasks)

    def sample(self, rng: np.random.Generator, n: int) -> list[Hashable]:
        return [self.tasks[i] for i in rng.integers(len(self.tasks), size=n)]

    def update(self, task_ids, rewards) -> None:
        pass

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


MODULES = {"rods": (rods.Config, rods.Rods), "scrl": (scrl.Config, scrl.Scrl)}


def make(name: str, tasks, **kwargs) -> Sampler:
    """``make("rods", tasks, variant=f, capacity=32)``: settings go to the module's ``Config``, the
    callables to the sampler."""
    if name not in NAMES:
        raise KeyError(f"unknown task sampler {name!r} (known: {', '.join(NAMES)})")
    if name == "uniform":
        return Uniform(tasks, **kwargs)
    config, cls = MODULES[name]
    fields = {f.name for f in dataclasses.fields(config)}
    settings = {k: v for k, v in kwargs.items() if k in fields}
    return cls(tasks, cfg=config(**settings), **{k: v for k, v in kwargs.items() if k not in fields})


__all__ = ["NAMES", "Sampler", "Uniform", "make"]
