r"""``credo``: stage rewards from intermediate evidence, outcome weight redistributed, total conserved (CREDO).

e_t in [0, 1] is the evidence of step t's stage (retrieval hit, evidence kept). With A_g the
grpo advantage and a small delta = 0.05 so that no step gets exactly nothing::

    u_t     = e_t + delta   if A_g >= 0,   1 - e_t + delta   if A_g < 0
    A_{g,t} = A_g T u_t / sum_t u_t  +  beta (e_t - mean_{steps of the group in t's role} e)

The first term keeps the rollout's total at A_g T; the second (beta = 0.5) is centred per role
within the group, so a group whose rollouts all failed (A = 0) still learns from its evidence.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import EPS, Credit, flat, group_advantage, split
from market.strict import STRICT

NEEDS = frozenset({"outcome", "evidence"})


@dataclass(config=STRICT)
class Config:
    beta: float = Field(0.5, ge=0)
    """Weight of the role-centred evidence bonus."""
    delta: float = Field(0.05, gt=0)
    """Added to every step's weight, so that no step gets exactly nothing."""
    eps: float = Field(EPS, gt=0)
    """Added to the group's std (a group of equal outcomes gets 0, not a division by zero)."""


def estimate(group, cfg: Config) -> Credit:
    A = group_advantage(group, cfg.eps)
    e, _ = flat(group, "evidence")
    e = e.ravel()
    roles = [r for t in group for r in (t.role if t.role is not None else [""] * len(t))]
    ids: dict = {}
    key = np.array([ids.setdefault(r, len(ids)) for r in roles], dtype=np.int64)
    mean = np.bincount(key, e, len(ids)) / np.maximum(np.bincount(key, minlength=len(ids)), 1)
    bonus = split(group, cfg.beta * (e - mean[key]))
    out = []
    for t, a, b, ev in zip(group, A, bonus, split(group, e)):
        u = (ev if a >= 0 else 1 - ev) + cfg.delta
        out.append(a * len(t) * u / u.sum() + b if len(t) else b)
    return Credit(out)
