r"""``grse``: group-relative (agent, skill) attribution (GRSE; skills/credit.py, docs: concepts/skills.md).

Per step the grpo advantage A_g; per (agent, skill) column k the joint ridge fit of
skills/credit.py over the group (one question), with u_{gk} = 1 when rollout g's agent a(k)
used skill s(k) at some step::

    v_gk   = u_gk - mean_g u_gk
    credit = (V^T V + ridge I)^-1 V^T A                -> Credit.skills[(agent, skill)]

with the agents' participation (whether each acted in rollout g) as nuisance columns beside V.
The formula and its behaviour (a skill merely present in successful runs, or riding along with
its agent being routed into them, gets no credit) are those of
:func:`skills.credit.group_relative_credit`, which this module calls.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import EPS, Credit, broadcast
from skills.credit import CreditConfig, Rollout, batch, group_relative_credit
from market.strict import STRICT

NEEDS = frozenset({"outcome", "skill"})


@dataclass(config=STRICT)
class Config:
    eps: float = Field(EPS, gt=0)
    """Added to each group's std of rewards before the regression (a group of equal rewards gets 0)."""
    ridge: float = Field(1.0, gt=0)
    """Ridge of the joint (agent, skill) fit (skills/credit.py)."""


def estimate(group, cfg: Config) -> Credit:
    if len(group) < 2:
        return Credit(broadcast(group, np.zeros(len(group))))
    rollouts = []
    for t in group:
        used: dict = {}
        for a, skill in zip(t.agent, t.skill):
            used.setdefault(a if isinstance(a, str) else int(a), set()).add(str(skill))
        rollouts.append(Rollout(t.outcome, skills=used))
    credit_cfg = CreditConfig(group_size=len(group), eps=cfg.eps, ridge=cfg.ridge)
    b = batch([(0, rollouts)], credit_cfg)
    fit = group_relative_credit(b.rewards, b.usage, b.questions, credit_cfg, b.acted)
    return Credit(broadcast(group, fit.advantage[0]), dict(zip(b.keys, fit.credit.tolist())))
