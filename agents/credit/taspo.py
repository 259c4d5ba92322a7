r"""``taspo``: keep the outcome's direction, reweight its steps by action scores (TASPO).

With A_g the grpo advantage and z the action scores of a rollout, centred within it::

    d_t     = tanh(z_t - mean z) - mean_t tanh(z_t - mean z)
    w_t     = 1 + eps d_t / max(1, max_t |d_t|)                  in [1 - eps, 1 + eps], mean exactly 1
    A_{g,t} = A_g w_t

so sign and sum (A_g T) are those of grpo. eps = 0.2.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import EPS, Credit, group_advantage
from market.strict import STRICT

NEEDS = frozenset({"outcome", "score"})


@dataclass(config=STRICT)
class Config:
    eps: float = Field(0.2, ge=0, le=1)
    """The weights' spread: w_t in [1 - eps, 1 + eps] (at most 1, so no weight is negative)."""
    std_eps: float = Field(EPS, gt=0)
    """Added to the group's std of outcomes (a group of equal outcomes gets 0, not a division by zero)."""


def weights(score: np.ndarray, eps: float) -> np.ndarray:
    z = np.asarray(score, dtype=np.float64)
    if z.size == 0:
        return z
    h = np.tanh(z - z.mean())
    d = h - h.mean()
    return 1 + eps * d / max(1.0, float(np.abs(d).max()))


def estimate(group, cfg: Config) -> Credit:
    return Credit([a * weights(t.score, cfg.eps) for t, a in zip(group, group_advantage(group, cfg.std_eps))])
