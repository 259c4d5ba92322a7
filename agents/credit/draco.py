r"""``draco``: distribute the outcome advantage by per-step quality from criteria (DRACO).

p_t / f_t: criteria the step is responsible for that passed / failed (checks or a judge's
k = 3 votes). With A_g the grpo advantage::

    Q_t     = p_t / (p_t + f_t)              (1/2 for a step with no criteria)
    u_t     = Q_t  if A_g >= 0,   1 - Q_t  if A_g < 0
    A_{g,t} = A_g T u_t / sum_t u_t          (uniform when sum u = 0)

Winners credit their good steps, losers blame their bad ones; sum (A_g T) and sign are kept.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import EPS, Credit, group_advantage
from market.strict import STRICT

NEEDS = frozenset({"outcome", "criteria"})


@dataclass(config=STRICT)
class Config:
    eps: float = Field(EPS, gt=0)
    """Added to the group's std (a group of equal outcomes gets 0, not a division by zero)."""


def quality(criteria) -> np.ndarray:
    c = np.asarray(criteria, dtype=np.float64).reshape(-1, 2)
    n = c.sum(1)
    return np.where(n > 0, c[:, 0] / np.maximum(n, 1e-300), 0.5)


def estimate(group, cfg: Config) -> Credit:
    out = []
    for t, a in zip(group, group_advantage(group, cfg.eps)):
        Q = quality(t.criteria)
        u = Q if a >= 0 else 1 - Q
        out.append(a * len(t) * u / u.sum() if u.sum() > 0 else np.full(len(t), a))
    return Credit(out)
