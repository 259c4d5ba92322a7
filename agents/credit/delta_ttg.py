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

from dataclasses import dataclass

import numpy as np

from agents.credit.base import EPS, Credit, group_advantage

NEEDS = frozenset({"outcome", "meter"})


@dataclass
class Config:
    rho: float = 0.2
    cap: float = 5.0
    eps: float = EPS


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
