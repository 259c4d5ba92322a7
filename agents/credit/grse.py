r"""``grse``: group-relative (agent, skill) attribution (GRSE; skills/credit.py, DESIGN.md "Skills").

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
from market.config import STRICT
from skills.credit import CreditConfig, group_relative_credit

NEEDS = frozenset({"outcome", "skill"})


@dataclass(config=STRICT)
class Config:
    eps: float = Field(EPS, gt=0)
    ridge: float = Field(1.0, gt=0)
    """Ridge of the joint (agent, skill) fit (skills/credit.py)."""


def estimate(group, cfg: Config) -> Credit:
    if len(group) < 2:
        return Credit(broadcast(group, np.zeros(len(group))))
    used = [{(a if isinstance(a, str) else int(a), str(s)) for a, s in zip(t.agent, t.skill)} for t in group]
    keys = sorted(set().union(*used))
    usage = np.array([[k in u for k in keys] for u in used], dtype=np.float64).reshape(1, len(group), len(keys))
    agents = sorted({a for u in used for a, _ in u})
    acted = np.array([[a in {b for b, _ in u} for a in agents] for u in used],
                     dtype=np.float64).reshape(1, len(group), len(agents))
    rewards = np.array([[t.outcome for t in group]], dtype=np.float64)
    fit = group_relative_credit(rewards, usage, np.array([0]),
                                CreditConfig(group_size=len(group), eps=cfg.eps, ridge=cfg.ridge), acted)
    return Credit(broadcast(group, fit.advantage[0]), dict(zip(keys, fit.credit.tolist())))
