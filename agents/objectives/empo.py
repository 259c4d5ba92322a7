r"""``empo``: completions that execute to the same effect share one ratio inside the clip.

Two completions of a group that parse to the same action and reach the same next state (the same
``effect`` id) did the same thing in the world; textual differences between them carry no credit.
So within each group g and effect e they share the mean of their length-normalised ratios::

    rho_m       = exp(mean_t log r_{m,t})
    rho_bar_ge  = mean_{m in (g, e)} rho_m
    L           = - mean_m min(rho_bar_{g(m)e(m)} A_m, clip(rho_bar, 1 +- clip) A_m)

A step alone in its effect class is grpo exactly; the clip then bounds the class's move, not each text's.
"""

from __future__ import annotations

import torch
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.objectives.batch import PolicyBatch, step_mean
from agents.objectives.grpo import surrogate
from market.strict import STRICT

NEEDS = ("effect",)


@dataclass(config=STRICT)
class Config:
    clip: float = Field(0.2, gt=0, lt=1)
    """PPO's clip range on the shared ratio."""


def shared_ratio(batch: PolicyBatch) -> tuple[torch.Tensor, int]:
    """[M] each step's effect-class mean of rho = exp(mean_t log r_t), the class keyed by (group, effect);
    and the number of classes."""
    rho = step_mean(batch.logp - batch.old_logp, batch.mask).exp()
    _, cls = torch.unique(torch.stack([batch.group, batch.effect], 1), dim=0, return_inverse=True)
    k = int(cls.max()) + 1
    total = rho.new_zeros(k).index_add(0, cls, rho)
    count = rho.new_zeros(k).index_add(0, cls, torch.ones_like(rho))
    return (total / count)[cls], k


def loss(batch: PolicyBatch, cfg: Config) -> tuple:
    rho, classes = shared_ratio(batch)
    value, stats = surrogate(rho.log(), torch.zeros_like(rho), batch.advantage, cfg.clip)  # exp(log rho - 0) = rho
    stats["effects"] = float(classes)
    return value, stats
