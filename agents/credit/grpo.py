r"""``grpo``: the outcome advantage, broadcast to every step (GRPO, DeepSeekMath).

    A_g    = (r_g - mean_g r) / (std_g r + eps)        population std over the G rollouts
    A_{g,t} = A_g                                         for every step t of rollout g

A group whose outcomes are all equal gets 0 everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from agents.credit.base import EPS, Credit, broadcast, group_advantage

NEEDS = frozenset({"outcome"})


@dataclass
class Config:
    eps: float = EPS


def estimate(group, cfg: Config) -> Credit:
    return Credit(broadcast(group, group_advantage(group, cfg.eps)))
