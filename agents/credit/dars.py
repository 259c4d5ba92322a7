r"""``dars``: the outcome's credit split softly between a planner and a renderer by how much of the outcome's spread
the plans explain; the planner's steps also earn a prefix-gated plan reward.

In a planner/renderer world (scenarios/plangrid.py) a rollout's plan is written once and rendered once. The group's
rollouts that wrote the same plan (the world's ``plan`` signal) are several renders of one plan, the distinct plans
several plans of the task: the multi-plan x multi-render design, read off the group instead of sampled for it. The
spread of the outcomes within a plan is the renderer's doing, the rest the plans'. With ``s^2`` the group's outcome
variance and ``sigma^2`` the pooled variance within the plans rendered twice or more, the planner's share is::

    w = clip(1 - sigma^2 / s^2, 0, 1),   sigma^2 = sum_p sum_{g in p} (r_g - mean_p r)^2 / sum_p (n_p - 1),
                                         s^2     = sum_g (r_g - mean r)^2 / (G - 1)

(``prior`` = 0.5 where no plan was rendered twice, or the outcomes are equal: nothing tells the two apart). A
planner's step also earns its plan's prefix-gated reward ``q`` (the world's ``prefix``: the share of the plan's
fields right before the first wrong one, so a plan whose first field is wrong earns none), centred over the group's
planner steps, times ``gate``::

    A_{g,t} = w A_g + gate (q_{g,t} - mean q)   at a planner step (prefix_{g,t} >= 0)
            = (1 - w) A_g                       at any other step

``A_g`` is grpo's outcome advantage, so the two roles' shares of it add up to it.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import EPS, Credit, group_advantage, outcomes
from market.strict import STRICT

NEEDS = frozenset({"outcome", "plan", "prefix"})


@dataclass(config=STRICT)
class Config:
    prior: float = Field(0.5, ge=0, le=1)
    """The planner's share where the group cannot tell plan from render (no plan rendered twice, equal outcomes)."""
    gate: float = Field(1.0, ge=0)
    """Weight of the prefix-gated plan reward in a planner step's advantage."""
    eps: float = Field(EPS, gt=0)
    """Added to the group's std of outcomes; a group whose outcome variance is below it keeps the prior planner share."""


def planner_share(group, cfg: Config) -> float:
    """w: the share of the group's outcome variance not explained by renders of the same plan."""
    r = outcomes(group)
    keys = [next((p for p in reversed(list(t.plan)) if p), None) or ("no plan", g) for g, t in enumerate(group)]
    renders = {}
    for key, value in zip(keys, r):
        renders.setdefault(key, []).append(value)
    repeated = [np.asarray(v) for v in renders.values() if len(v) > 1]
    total = r.var(ddof=1) if len(r) > 1 else 0.0
    if not repeated or total < cfg.eps:
        return cfg.prior
    within = sum(((v - v.mean()) ** 2).sum() for v in repeated) / sum(len(v) - 1 for v in repeated)
    return float(np.clip(1 - within / total, 0, 1))


def estimate(group, cfg: Config) -> Credit:
    w = planner_share(group, cfg)
    prefix = [np.asarray(t.prefix, dtype=np.float64).reshape(len(t)) for t in group]
    planned = np.concatenate([q[q >= 0] for q in prefix]) if group else np.zeros(0)
    centre = planned.mean() if planned.size else 0.0
    return Credit([np.where(q >= 0, w * a + cfg.gate * (q - centre), (1 - w) * a)
                   for q, a in zip(prefix, group_advantage(group, cfg.eps))])
