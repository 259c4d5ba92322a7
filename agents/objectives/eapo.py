r"""``eapo``: entropy-asymmetric token credit.

In a success the tokens where the policy was unsure (high entropy: the forks where it chose) earned
the outcome; in a failure the tokens where it was sure (low entropy: confident mistakes) are the ones
to unlearn. Token weights scale the step's advantage, asymmetrically by its sign::

    z_t = min(H_t / mean_tokens H, 2)                       entropy relative to the batch's mean
    w_t = 1 + boost   x max(z_t - 1, 0)      A > 0  (up to 1 + boost at twice the mean entropy)
    w_t = 1 + penalty x max(1 - z_t, 0)      A < 0  (up to 1 + penalty at zero entropy)
    w_t = 1                                  A = 0
    L   = - mean_tokens min(r_t w_t A, clip(r_t, 1 +- clip) w_t A)

A token of average entropy keeps weight 1, so the objective is per-token PPO wherever entropy is flat.
The sign of the advantage, not the raw outcome, says success: it is what the update reinforces.
"""

from __future__ import annotations

import torch
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.objectives.batch import EPS, PolicyBatch, clipped, token_mean
from market.strict import STRICT

NEEDS = ()


@dataclass(config=STRICT)
class Config:
    clip: float = Field(0.2, gt=0, lt=1)
    """PPO's clip range on the per-token ratio."""
    boost: float = Field(1.0, ge=0)
    """Extra weight on high-entropy tokens of positive-advantage steps (at z = 2)."""
    penalty: float = Field(1.0, ge=0)
    """Extra weight on low-entropy tokens of negative-advantage steps (at z = 0)."""


def weights(batch: PolicyBatch, cfg: Config) -> torch.Tensor:
    """[M, L] the token weights w_t above."""
    H = batch.entropy.detach()
    z = (H / token_mean(H, batch.mask).clamp(min=EPS)).clamp(max=2)
    A = batch.advantage[:, None]
    up, down = 1 + cfg.boost * (z - 1).clamp(min=0), 1 + cfg.penalty * (1 - z).clamp(min=0)
    return torch.where(A > 0, up, torch.where(A < 0, down, torch.ones_like(z)))


def loss(batch: PolicyBatch, cfg: Config) -> tuple:
    w = weights(batch, cfg)
    ratio = torch.where(batch.mask, batch.logp - batch.old_logp, 0).exp()
    value = -token_mean(clipped(ratio, w * batch.advantage[:, None], cfg.clip), batch.mask)
    return value, {"policy_loss": float(value.detach()), "weight": float(token_mean(w, batch.mask))}
