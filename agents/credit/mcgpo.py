r"""``mcgpo``: compare actions only within matched contexts, shrunk, with opposite-fold estimates (MCGPO).

A step's context is c = (progress rubric, state summary) = (p_t, s_t). The group is split in
two folds by rollout index (g mod 2). For a step of fold f, everything is estimated from the
other fold's steps in the same context (so a rollout never grades itself)::

    Q(c, a)  = mean outcome of fold-(1-f) rollouts over their steps taking a in c      (n of them)
    V(c)     = mean outcome of fold-(1-f) rollouts over their steps in c
    A_{g,t}  = n / (n + kappa) (Q(c, a) - V(c))                           0 without a match

kappa = 1 (per task). One-rollout groups get 0.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import Credit, split
from market.strict import STRICT

NEEDS = frozenset({"outcome", "state", "progress"})


@dataclass(config=STRICT)
class Config:
    kappa: float = Field(1.0, ge=0)
    """Shrinkage: a context-action seen n times keeps n / (n + kappa) of its estimate."""


def estimate(group, cfg: Config) -> Credit:
    ctx_id, ctx_act_id = {}, {}
    rows = []  # (fold, context, context+action, outcome) per step
    for g, t in enumerate(group):
        for s in range(len(t)):
            c = (float(t.progress[s]), t.state[s])
            rows.append((g % 2, ctx_id.setdefault(c, len(ctx_id)),
                         ctx_act_id.setdefault((c, int(t.action[s])), len(ctx_act_id)), t.outcome))
    if not rows:
        return Credit([np.zeros(0) for _ in group])
    fold, c, ca, r = (np.array(x, dtype=np.float64) for x in zip(*rows))
    fold, c, ca = fold.astype(int), c.astype(int), ca.astype(int)
    A = np.zeros(len(rows))
    for f in (0, 1):
        other = fold != f
        n_c = np.bincount(c[other], minlength=len(ctx_id))
        V = np.bincount(c[other], r[other], len(ctx_id)) / np.maximum(n_c, 1)
        n_ca = np.bincount(ca[other], minlength=len(ctx_act_id))
        Q = np.bincount(ca[other], r[other], len(ctx_act_id)) / np.maximum(n_ca, 1)
        mine = fold == f
        n = n_ca[ca[mine]]
        A[mine] = np.where(n > 0, n / (n + cfg.kappa) * (Q[ca[mine]] - V[c[mine]]), 0.0)
    return Credit(split(group, A))
