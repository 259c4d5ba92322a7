"""``uniform``: every task equally likely, drawn with replacement: the baseline the others are compared to."""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
from pydantic.dataclasses import dataclass

from market.strict import STRICT

NEEDS = ("tasks",)


@dataclass(config=STRICT)
class Config:
    """No settings."""


class Uniform:
    def __init__(self, tasks, cfg: Config | None = None):
        self.tasks = list(tasks)

    def sample(self, rng: np.random.Generator, n: int) -> list[Hashable]:
        return [self.tasks[i] for i in rng.integers(len(self.tasks), size=n)]

    def update(self, task_ids, rewards) -> None:
        pass

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


SAMPLER = Uniform
