"""Blocks World's settings (``[blocks]``), its moves and features, and Hayek's hand-written solution."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, field_validator
from pydantic.dataclasses import dataclass

from market.strict import STRICT

MOVES = ((1, 2), (1, 3), (2, 1), (2, 3), (3, 1), (3, 2))  # action index -> (from stack, to stack)
ACTIONS = tuple(f"{a}to{b}" for a, b in MOVES)
SOURCE = np.array([src for src, _ in MOVES])  # action index -> the stack it takes a block from
FEATURES = ("wrong1", "prefix", "progress", "need_at", "need_depth", "next", "top1", "top2", "top3")
MARKET_COLUMNS = ("h1", "h2", "h3")
"""Appended to every observation for the agents' machinery, never read by a rule's condition:
the stack heights (a rule wakes only where its move is legal)."""
PROGRESS = 10  # progress = floor(PROGRESS x prefix / n)
CLIP = 3  # counts and depths saturate here: "3 or more"
MEMORY = 512  # recent training observations a policy keeps for covering newcomers

SOLUTION = [  # Hayek's answer, written by hand: a test checks it solves held-out instances at every size
    "wrong1 > 0 and need_at != 2 -> 1to2",
    "wrong1 > 0 and need_at == 2 -> 1to3",
    "wrong1 == 0 and need_at == 2 and need_depth == 0 -> 2to1",
    "wrong1 == 0 and need_at == 3 and need_depth == 0 -> 3to1",
    "wrong1 == 0 and need_at == 2 and need_depth > 0 -> 2to3",
    "wrong1 == 0 and need_at == 3 and need_depth > 0 -> 3to2",
]


@dataclass(config=STRICT)
class Config:
    colours: int = Field(3, ge=1, le=9)
    """C: colours of blocks."""
    train_sizes: list[int] = Field(default_factory=lambda: [4, 8, 16])
    """Goal sizes n drawn for training (uniformly among those unlocked by the curriculum)."""
    heldout_sizes: list[int] = Field(default_factory=lambda: [4, 8, 16, 32])
    """Sizes of the held-out evaluation, run on the final population, frozen."""
    heldout_count: int = Field(100, ge=1)
    """Held-out instances per size."""
    heldout_seed: int = Field(20_000_917, ge=0)
    """Seed of the held-out instances; training draws from the model's RNG, never from this stream."""
    task_pool: int = Field(64, ge=1, le=100_000)
    """agents.tasks: the instances of each training size a task sampler draws from (rods: then their
    recolourings), drawn once from the run's seed, apart from the held-out stream."""
    reward: Literal["size", "unit"] = "unit"
    """What a solved instance pays: n (one credit per goal block) or 1."""
    horizon_factor: int = Field(6, ge=1)
    """Steps allowed per episode = horizon_factor x n."""
    curriculum: bool = True
    """Unlock train_sizes one at a time (smallest first) as the success rate passes the threshold."""
    curriculum_threshold: float = Field(0.8, ge=0, le=1)
    """Success rate (moving average over about curriculum_window training episodes) that unlocks the next size."""
    curriculum_window: int = Field(200, ge=1)
    """Training episodes the curriculum's moving success rate spans, about: a batch of n episodes at the largest
    unlocked size weighs min(1, n / curriculum_window) in it."""
    features: list[str] = Field(default_factory=lambda: ["wrong1", "need_at", "need_depth"])
    """The features rules may read (a subset of FEATURES; the others are hidden from the agents). The
    default leaves out ``progress`` and ``prefix``: a rule keyed on them learns a size, not a move."""
    max_terms: int = Field(3, ge=1, le=8)
    """Terms per rule condition."""
    p_revise_move: float = Field(0.5, ge=0, le=1)
    """Explore: chance that a revision changes the move at the failure state (else it narrows the condition)."""

    @field_validator("features")
    @classmethod
    def _features(cls, names: list[str]) -> list[str]:
        unknown = sorted(set(names) - set(FEATURES))
        if unknown or not names:
            raise ValueError(f"unknown features {unknown}; expected a non-empty subset of {list(FEATURES)}")
        return [f for f in FEATURES if f in names]

    @field_validator("train_sizes", "heldout_sizes")
    @classmethod
    def _sizes(cls, sizes: list[int]) -> list[int]:
        if not sizes or min(sizes) < 1:
            raise ValueError("expected a non-empty list of sizes >= 1")
        return sorted(sizes)
