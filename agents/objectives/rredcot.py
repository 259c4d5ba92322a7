r"""``rredcot``: the outcome redistributed over the segments by how each moved the belief in the reference answer.

At each segment boundary (here: each step, one reply) the policy's value against the reference solution is
its belief in the gold answer there (agents/objectives/privileged.py ``belief_gain``: the answer scored before
the reply and with it in the prompt). A success's reward goes mostly to the segments that raised that belief,
a failure's penalty mostly to the ones that lowered it; the rest uniformly, so each episode's total stays the
outcome's::

    Delta_m = belief_after_m - belief_before_m
    w_m     = (1 - mix) + mix x max(sign(A_m) Delta_m, 0) / mean_{k in episode} max(sign(A_k) Delta_k, 0)
    L       = grpo's clipped surrogate on w_m A_m                         (uniform where no segment moved it)

The method cuts one long reasoning into segments by keywords and entropy and scores all boundaries in one
prefix pass; the market's steps are already the segments, and their boundaries are scored in the privileged
pass's one batched call.
"""

from __future__ import annotations

import torch
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.objectives.batch import PolicyBatch
from agents.objectives.grpo import Config as Grpo
from agents.objectives.privileged import belief_gain, mean_one, reweighted
from market.strict import STRICT

NEEDS = ("belief_before", "belief_after")


@dataclass(config=STRICT)
class Config:
    grpo: Grpo = Field(default_factory=Grpo)
    """The surrogate's settings."""
    mix: float = Field(0.5, ge=0, le=1)
    """The share of each episode's advantage given out by belief movement (the rest uniformly)."""


def loss(batch: PolicyBatch, cfg: Config) -> tuple:
    moved = (torch.sign(batch.advantage) * belief_gain(batch)).clamp(min=0)
    weight = (1 - cfg.mix) + cfg.mix * mean_one(moved, batch)
    value, stats = reweighted(batch, weight, cfg.grpo)
    stats.update(belief_gain=float(belief_gain(batch).mean()), weight_max=float(weight.max()))
    return value, stats
