r"""``depgpo``: only the steps the verified outcome depends on share its advantage (DepGPO).

Each step lists the earlier steps whose output it read (a read/write dependency graph).
Backtrack from what the verifier checks (``checked``; default: the last step)::

    D_g     = checked_g  closed under  t in D_g  =>  deps_t subset of D_g
    A_{g,t} = A_g [t in D_g]

A_g is the grpo advantage; a step nothing checked depends on (a detour, a dead end) gets 0.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import EPS, Credit, group_advantage
from market.strict import STRICT

NEEDS = frozenset({"outcome", "deps"})


@dataclass(config=STRICT)
class Config:
    eps: float = Field(EPS, gt=0)
    """Added to the group's std (a group of equal outcomes gets 0, not a division by zero)."""


def relevant(t) -> np.ndarray:
    """[T] bool: the steps the checked ones depend on, transitively (themselves included)."""
    T = len(t)
    keep = np.zeros(T, dtype=bool)
    todo = list(t.checked) if t.checked is not None else ([T - 1] if T else [])
    while todo:
        s = todo.pop()
        if 0 <= s < T and not keep[s]:
            keep[s] = True
            todo.extend(t.deps[s])
    return keep


def estimate(group, cfg: Config) -> Credit:
    return Credit([a * relevant(t) for t, a in zip(group, group_advantage(group, cfg.eps))])
