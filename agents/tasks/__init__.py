"""Task samplers: which tasks the next round's rollouts are spent on (docs: concepts/credit-methods.md).

One interface (:class:`Sampler`), one module per sampler (found by name, agents/named/:
a new sampler is one new file): ``sampler = make("rods", tasks, variant=f)``; each round
``sampler.sample(rng, n)`` returns n task specs (the scenario runs G rollouts of each), and after
it ``sampler.update(task_ids, rewards)`` reports one reward per rollout. Tasks are opaque hashable
specs; everything a sampler needs to know about a task (an isomorphic variant of it, its
sub-problems) the scenario passes in as a callable. Every sampler saves and restores itself.

A world draws its training rounds through :class:`Draw` (``agents.tasks``); a scenario names what its
world gives a sampler in its scenario's ``SPEC.task_signals``, and a sampler needing more (:data:`NEEDS`) is refused when the
config is loaded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from typing import Protocol

import numpy as np

from agents.named import TASKS as REGISTRY
from agents.tasks import rods
from agents.tasks.uniform import Uniform

NAMES = REGISTRY.names
NEEDS = {name: REGISTRY.needs(name) for name in NAMES}
"""What each sampler needs of a world (its module's ``NEEDS``): its ``tasks``; rods an isomorphic ``variant`` of
a task and a ``progress`` reward in [0, 1]; scrl a task's verifiable ``subproblems``."""


class Sampler(Protocol):
    def sample(self, rng: np.random.Generator, n: int) -> list[Hashable]: ...

    def update(self, task_ids: Sequence[Hashable], rewards: Sequence[float]) -> None: ...

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...


def make(name: str, tasks, **kwargs) -> Sampler:
    """``make("rods", tasks, variant=f, capacity=32)``: settings go to the module's ``Config``, the
    callables to the sampler."""
    fields = {f.name for f in dataclasses.fields(REGISTRY.module(name).Config)}
    cfg = REGISTRY.config(name, **{k: v for k, v in kwargs.items() if k in fields})
    return REGISTRY.module(name).SAMPLER(tasks, cfg=cfg, **{k: v for k, v in kwargs.items() if k not in fields})


class Draw:
    """A world's training tasks from the sampler ``name``: a round of B rollouts is B / G tasks, G rollouts
    of each (agents.group), and after it one reward per rollout goes back (progress for rods, else the outcome).
    Once rods has retired every task and variant (a world of few tasks: relay's chain has K! relabellings)
    no reward varies any more, and rounds draw the world's own tasks uniformly."""

    def __init__(self, name: str, tasks, variant=None, subproblems=None, settings=None):
        """``settings``: the sampler's ``Config`` (``agents.task_settings.<name>``; None: its defaults)."""
        given = {"variant": variant, "subproblems": subproblems}
        own = dataclasses.asdict(settings) if settings is not None else {}
        self.sampler = make(name, tasks, **own, **{k: f for k, f in given.items() if k in NEEDS[name]})
        self.progress = "progress" in NEEDS[name]
        self.own = Uniform(tasks)

    def draw(self, rng: np.random.Generator, batch: int, group: int) -> list[Hashable]:
        n = -(-batch // group)
        try:
            tasks = self.sampler.sample(rng, n)
        except rods.Exhausted:  # it draws nothing from rng first: a resumed run falls back at the same round
            tasks = self.own.sample(rng, n)
        return [task for task in tasks for _ in range(group)][:batch]

    def update(self, tasks: Sequence[Hashable], progress: np.ndarray, solved: np.ndarray) -> None:
        self.sampler.update(tasks, np.asarray(progress if self.progress else solved, dtype=np.float64).tolist())


__all__ = ["NAMES", "NEEDS", "Draw", "Sampler", "Uniform", "make"]
