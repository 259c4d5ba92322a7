r"""``triage``: label each step, add a fixed process reward to the outcome advantage (TRIAGE).

    A_{g,t} = A_g + b(label_t),   b = {progress: +0.5, exploration: +0.2, noop: 0, regression: -0.5}

A_g is the grpo advantage. The paper fixes +0.2 for exploration and -0.5 for regression;
+0.5 for progress is our choice (symmetric with regression). Worlds with a progress signal get
labels from :func:`labels_from_progress`.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import EPS, Credit, group_advantage
from market.strict import STRICT

NEEDS = frozenset({"outcome", "labels"})
LABELS = ("progress", "exploration", "noop", "regression")


@dataclass(config=STRICT)
class Bonus:
    """b(label): the process reward added to the outcome advantage, one field per label of LABELS."""

    progress: float = 0.5
    """Bonus of a step that raised the task's progress."""
    exploration: float = 0.2
    """Bonus of a step that reached a new state at the same progress."""
    noop: float = 0.0
    """Bonus of a step that left the state unchanged."""
    regression: float = -0.5
    """Bonus (a penalty when negative) of a step that lowered the progress."""


@dataclass(config=STRICT)
class Config:
    bonus: Bonus = Field(default_factory=Bonus)
    """Its own table: ``[agents.credit_settings.triage.bonus]``."""
    eps: float = Field(EPS, gt=0)
    """Added to the group's std (a group of equal outcomes gets 0, not a division by zero)."""


def labels_from_progress(progress, state) -> list[str]:
    """Progress up: progress; down: regression; same progress, new state: exploration; same state: noop."""
    p = np.asarray(progress, dtype=np.float64)
    out = []
    for t in range(len(p) - 1):
        if p[t + 1] > p[t]:
            out.append("progress")
        elif p[t + 1] < p[t]:
            out.append("regression")
        else:
            out.append("noop" if state[t + 1] == state[t] else "exploration")
    return out


def estimate(group, cfg: Config) -> Credit:
    bonus = dataclasses.asdict(cfg.bonus)
    unknown = {l for t in group for l in t.labels} - set(bonus)
    if unknown:
        raise ValueError(f"triage: unknown step labels {sorted(unknown)}; expected {LABELS}")
    return Credit([a + np.array([bonus[l] for l in t.labels], dtype=np.float64)
                   for t, a in zip(group, group_advantage(group, cfg.eps))])
