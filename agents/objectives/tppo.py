r"""``tppo``: a token-level critic as cumulative per-token logits; each token is credited its value change.

The critic gives every token a logit c_t; the value of a prefix is the sigmoid of their running
sum, so it reads as the probability of success (gamma 1, binary outcome R). Its loss is BCE of every
prefix value on the outcome; a token's advantage is how much it moved the prefix value::

    z_t = sum_{k <= t} c_k,     V_t = sigmoid(z_t)          (V_{-1} = sigmoid(0) = 1/2: the empty sum)
    A_t = V_t - V_{t-1}                                      (detached: the critic learns only from BCE)
    L   = - mean_tokens min(r_t A_t, clip(r_t, 1 +- clip) A_t) + critic_coef x mean_tokens BCE(V_t, R)

with r_t = pi(a_t) / pi_old(a_t) per token. The first token's A carries the prompt's value too (no
separate prompt logit). A real-valued outcome in [0, 1] is a soft BCE label.
"""

from __future__ import annotations

import torch
from pydantic import Field
from pydantic.dataclasses import dataclass
from torch.nn import functional as F

from agents.objectives.batch import PolicyBatch, clipped, token_mean
from market.strict import STRICT

NEEDS = ("token_logits",)


@dataclass(config=STRICT)
class Config:
    clip: float = Field(0.2, gt=0, lt=1)
    """PPO's clip range on the per-token ratio."""
    critic_coef: float = Field(0.5, ge=0)
    """Weight of the critic's BCE in the summed loss."""


def prefix_logits(batch: PolicyBatch) -> torch.Tensor:
    """[M, L] z_t = sum_{k <= t} c_k over real tokens (padding adds nothing)."""
    return torch.where(batch.mask, batch.token_logits, 0).cumsum(1)


def advantages(z: torch.Tensor) -> torch.Tensor:
    """[M, L] A_t = sigmoid(z_t) - sigmoid(z_{t-1}), z_{-1} = 0."""
    V = torch.sigmoid(z)
    return V - torch.cat([torch.full_like(V[:, :1], 0.5), V[:, :-1]], 1)


def loss(batch: PolicyBatch, cfg: Config) -> tuple:
    z = prefix_logits(batch)
    A = advantages(z).detach()
    ratio = torch.where(batch.mask, batch.logp - batch.old_logp, 0).exp()
    policy = -token_mean(clipped(ratio, A, cfg.clip), batch.mask)
    target = batch.outcome.to(z.dtype)[:, None].expand_as(z)
    critic = token_mean(F.binary_cross_entropy_with_logits(z, target, reduction="none"), batch.mask)
    total = policy + cfg.critic_coef * critic
    return total, {"policy_loss": float(policy.detach()), "critic_loss": float(critic.detach()),
                   "value": float(token_mean(torch.sigmoid(z).detach(), batch.mask))}
