r"""``grpo``: the outcome advantage, broadcast to every step (GRPO, DeepSeekMath).

    A_g    = (r_g - mean_g r) / (std_g r + eps)        population std over the G rollouts
    A_{g,t} = A_g                                         for every step t of rollout g

A group whose outcomes are all equal gets 0 everywhere.
"""

from __future__ import annotations

from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import EPS, Credit, broadcast, group_advantage
from market.strict import STRICT

NEEDS = frozenset({"outcome"})


@dataclass(config=STRICT)
class Config:
    eps: float = Field(EPS, gt=0)
    """Added to the group's std (a group of equal outcomes gets 0, not a division by zero)."""


def estimate(group, cfg: Config) -> Credit:
    return Credit(broadcast(group, group_advantage(group, cfg.eps)))
