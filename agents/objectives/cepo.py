r"""``cepo``: token credit from the contrast of two informed teachers, the correct answer against a wrong one.

Each token is scored twice by privileged passes (agents/objectives/privileged.py): with the correct output at
the step's state in the prompt, and with a failed sibling's answer (another rollout of the same task that
failed) in its place. Their difference says whether the token follows the right answer or the wrong one;
stop-grad, its direction anchored to the outcome's sign, it scales each token's share of the advantage::

    c_t   = log pi(y_t | x, correct) - log pi(y_t | x, a failed sibling's answer)
    A_t   = A_m x clip(1 + lambda sign(A_m) c_t, 1 - eps_w, 1 + eps_w)
    L     = - mean over tokens of min(rho_t A_t, clip(rho_t, 1 +- clip) A_t)        (token-level, per-token ratio)

A success's tokens that follow the correct answer gain more; a failure's tokens that follow the wrong answer
lose more. The method's linear decay of lambda over training is a schedule this objective (a function of one
batch) does not see: lambda is set per run.
"""

from __future__ import annotations

import torch
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.objectives.batch import PolicyBatch, clipped, token_mean
from agents.objectives.grpo import Config as Grpo
from market.strict import STRICT

NEEDS = ("teacher_logp", "sibling_logp")


@dataclass(config=STRICT)
class Config:
    grpo: Grpo = Field(default_factory=Grpo)
    """The surrogate's clip range (its kl_coef is not read: the token surrogate has none)."""
    lam: float = Field(0.5, ge=0)
    """lambda: how strongly the contrast tilts each token's advantage."""
    eps_w: float = Field(0.5, gt=0, lt=1)
    """The token weight's clip: within [1 - eps_w, 1 + eps_w], so no token flips its outcome's sign."""


def credit(batch: PolicyBatch) -> torch.Tensor:
    """[M, L] c_t, stop-grad, 0 on padding."""
    return torch.where(batch.mask, batch.teacher_logp.detach() - batch.sibling_logp.detach(), 0)


def loss(batch: PolicyBatch, cfg: Config) -> tuple:
    c = credit(batch).to(batch.advantage.dtype)
    sign = torch.sign(batch.advantage)[:, None]
    weight = (1 + cfg.lam * sign * c).clamp(1 - cfg.eps_w, 1 + cfg.eps_w)
    advantage = batch.advantage[:, None] * weight
    ratio = torch.exp(batch.logp - batch.old_logp.detach())
    value = -token_mean(clipped(ratio, advantage, cfg.grpo.clip), batch.mask)
    return value, {"policy_loss": float(value.detach()), "ratio": float(token_mean(ratio, batch.mask).detach()),
                   "contrast": float(token_mean(c, batch.mask)), "weight_max": float(weight.max())}
