r"""``trial``: the outcome, told afterwards, says which turns it was about.

A hindsight pass scores each turn's tokens with the episode's outcome in the prompt (agents/objectives/
privileged.py). A success's turns that the informed policy finds likelier were the ones that led there; a
failure's turns it finds less likely were the ones it disowns. The signed per-token gap gives each turn a
weight, token-weighted mean 1 within its episode: the advantage is redistributed over the turns, never
rescaled::

    s_m = mean_t log pi(y_t | x, outcome) - log pi(y_t | x)
    u_m = exp(sign(A_m) s_m / T)
    w_m = u_m x sum_k n_k / sum_k n_k u_k          (n_k: turn k's tokens)
    L   = grpo's clipped surrogate on w_m A_m
"""

from __future__ import annotations

import torch
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.objectives.batch import PolicyBatch
from agents.objectives.grpo import Config as Grpo
from agents.objectives.privileged import mean_one, reweighted, turn_gap
from market.strict import STRICT

NEEDS = ("hindsight_logp",)


@dataclass(config=STRICT)
class Config:
    grpo: Grpo = Field(default_factory=Grpo)
    """The surrogate's settings."""
    temperature: float = Field(1.0, gt=0)
    """T: how sharply the hindsight gap tilts the weights (large: uniform, grpo's)."""


def loss(batch: PolicyBatch, cfg: Config) -> tuple:
    s = turn_gap(batch.hindsight_logp, batch, mean=True).to(batch.advantage.dtype)
    z = torch.sign(batch.advantage) * s / cfg.temperature
    weight = mean_one(torch.exp(z - z.max()), batch, tokens=True)
    value, stats = reweighted(batch, weight, cfg.grpo)
    stats.update(hindsight_gap=float(s.mean()), weight_max=float(weight.max()))
    return value, stats
