r"""``knowgpo``: group steps by the knowledge state they start from, not by their text (KnowGPO).

C_t is the set of atomic task conditions satisfied at state t, K the most conditions any state
of the group satisfies. Process reward, its advantage within steps that start from the same
condition set, and the mix with the outcome advantage A_g (grpo)::

    p_{g,t}   = (|C_{g,t+1}| - |C_{g,t}|) / K                     incremental gain of satisfied conditions
    P_{g,t}   = p_{g,t} - mean { p_{g',t'} : C_{g',t'} = C_{g,t} }
    A_{g,t}   = (1 - omega) A_g + omega P_{g,t}                    omega = 0.3
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import EPS, Credit, group_advantage, split
from market.strict import STRICT

NEEDS = frozenset({"outcome", "conditions"})


@dataclass(config=STRICT)
class Config:
    omega: float = Field(0.3, ge=0, le=1)
    """Weight of the condition-gain advantage against the outcome's."""
    eps: float = Field(EPS, gt=0)
    """Added to the group's std (a group of equal outcomes gets 0, not a division by zero)."""


def estimate(group, cfg: Config) -> Credit:
    A = group_advantage(group, cfg.eps)
    K = max((len(c) for t in group for c in t.conditions), default=0) or 1
    size = [np.array([len(c) for c in t.conditions], dtype=np.float64) for t in group]
    p = np.concatenate([np.diff(s) / K for s in size]) if group else np.zeros(0)
    start = {}
    key = np.array([start.setdefault(c, len(start)) for t in group for c in t.conditions[:-1]], dtype=np.int64)
    mean = np.bincount(key, p, len(start)) / np.maximum(np.bincount(key, minlength=len(start)), 1)
    P = split(group, p - mean[key])
    return Credit([(1 - cfg.omega) * a + cfg.omega * x for a, x in zip(A, P)])
