"""What the market needs from a world and from the agents' policy.

The market imports nothing from ``agents`` or ``scenarios``: it drives any
object with these methods. Shapes: B worlds in lockstep, N = population rows
(the house row 0 included, never eligible), F observation features.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np


class World(Protocol):
    """B independent task instances stepped in lockstep."""

    horizon: int
    """Maximum steps per episode; an episode still running then has failed."""

    def reset(self, batch: int, rng: np.random.Generator) -> None:
        """Start B fresh instances."""

    def observe(self) -> np.ndarray:
        """[B, F] features of the current state of each instance."""

    def step(self, actions: np.ndarray, acting: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Apply ``actions[b]`` where ``acting[b]``; return (reward [B] float, done [B] bool).

        A reward returned with ``done`` is the terminal reward; any other reward
        is a step reward for that step's winner.
        """

    @property
    def solved(self) -> np.ndarray:
        """[B] bool: which instances reached their goal."""


class Policy(Protocol):
    """The agents' skills, row-aligned with the population."""

    def eligible(self, obs: np.ndarray) -> np.ndarray:
        """[B, N] bool: which rows would act on each observation (wake-up)."""

    def act(self, obs: np.ndarray, winners: np.ndarray) -> np.ndarray:
        """[B] int actions of ``winners[b]`` on ``obs[b]`` (ignored where winners[b] < 0)."""

    def resize(self, capacity: int) -> None:
        """Grow row-aligned arrays to the population's new capacity."""

    def spawn(self, rows: np.ndarray, rng: np.random.Generator) -> None:
        """Give fresh random skills to newborn rows."""

    def inherit(self, rows: np.ndarray, parents: np.ndarray, rng: np.random.Generator) -> None:
        """Give each newborn row a mutated copy of its parent row's skills."""

    def describe(self, rows: np.ndarray) -> list[str]:
        """The skill text of each row (e.g. its rule), for the record."""
