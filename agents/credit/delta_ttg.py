r"""``delta_ttg``: redistribute the outcome advantage by the drop of a progress meter (Delta-TTG).

c_t is the meter (work left to finish; the world's exact value is its regression target).
With A_g the grpo advantage, per rollout of T steps::

    delta_t = c_t - c_{t+1}                                 work done by step t
    u_t     = max(delta_t, 0)  if A_g >= 0,  max(-delta_t, 0)  if A_g < 0      sign-aware
    q_t     = u_t / sum u        (uniform 1/T when sum u = 0)
    w_t     = (1 - rho) q_t + rho / T                        mixed with uniform, rho = 0.2
    A_{g,t} = A_g min(T w_t, M)                              multiplier capped at M = 5

sum_t T w_t = T, so before the cap the rollout's total is A_g T as in grpo; the cap can only
shrink a step's share.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import EPS, Credit, group_advantage
from market.strict import STRICT

NEEDS = frozenset({"outcome", "meter"})


@dataclass(config=STRICT)
class Config:
    rho: float = Field(0.2, ge=0, le=1)
    """Share of the uniform weight mixed into the meter's drop."""
    cap: float = Field(5.0, gt=0)
    """M: a step's multiplier T w_t is capped here."""
    eps: float = Field(EPS, gt=0)
    """Added to the group's std (a group of equal outcomes gets 0, not a division by zero)."""


def estimate(group, cfg: Config) -> Credit:
    out = []
    for t, a in zip(group, group_advantage(group, cfg.eps)):
        T = len(t)
        delta = -np.diff(np.asarray(t.meter, dtype=np.float64))
        u = np.maximum(delta if a >= 0 else -delta, 0.0)
        q = u / u.sum() if u.sum() > 0 else np.full(T, 1.0 / max(T, 1))
        w = (1 - cfg.rho) * q + cfg.rho / max(T, 1)
        out.append(a * np.minimum(T * w, cfg.cap))
    return Credit(out)
