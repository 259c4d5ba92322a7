r"""``grpo``: the clipped step-level surrogate, the reference every other objective is compared against.

The step is the unit (a market step's whole completion), its ratio length-normalised so a long
completion does not explode it; optional KL to a reference policy by the k3 estimator per token::

    rho_m = exp(mean_t log pi(a_{m,t}) / pi_old(a_{m,t}))
    L     = - mean_m min(rho_m A_m, clip(rho_m, 1 +- clip) A_m) + kl_coef x mean_m KL_m
    KL_m  = mean_t exp(d_t) - d_t - 1,   d_t = log pi_ref - log pi

:func:`surrogate` is the clipped objective itself, on per-step log-probabilities (the LM learner's chunked
update calls it directly, agents/learners/hf_grpo.py); :func:`loss` feeds it from a PolicyBatch.
"""

from __future__ import annotations

import torch
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.objectives.batch import MissingSignals, PolicyBatch, step_mean
from agents.objectives.kl import k3, penalised
from market.strict import STRICT

NEEDS = ()


@dataclass(config=STRICT)
class Config:
    clip: float = Field(0.2, gt=0, lt=1)
    """PPO's clip range on the step ratio."""
    kl_coef: float = Field(0.0, ge=0)
    """Weight of KL(pi || reference); > 0 needs the batch's ``ref_logp``."""


def loss(batch: PolicyBatch, cfg: Config) -> tuple:
    kl = None
    if cfg.kl_coef:
        if batch.ref_logp is None:
            raise MissingSignals("objective 'grpo' with kl_coef > 0 needs signal ref_logp")
        kl = step_mean(k3(batch.logp, batch.ref_logp), batch.mask)
    return surrogate(step_mean(batch.logp, batch.mask), step_mean(batch.old_logp, batch.mask),
                     batch.advantage, cfg.clip, kl, cfg.kl_coef)


def surrogate(logp: torch.Tensor, old_logp: torch.Tensor, advantage: torch.Tensor, clip: float,
              kl: torch.Tensor | None = None, kl_coef: float = 0.0) -> tuple[torch.Tensor, dict]:
    """Clipped step-level surrogate: -mean min(rho A, clip(rho, 1 +- clip) A) + kl_coef x mean KL."""
    ratio = torch.exp(logp - old_logp)
    clipped = torch.minimum(ratio * advantage, ratio.clamp(1 - clip, 1 + clip) * advantage)
    value = penalised(-clipped.mean(), kl, kl_coef)
    return value, {"policy_loss": float(value.detach()), "ratio": float(ratio.mean().detach()),
                  "kl": float(kl.detach().mean()) if kl is not None else 0.0}
