r"""``grpo``: the clipped step-level surrogate, the reference every other objective is compared against.

The step is the unit (a market step's whole completion), its ratio length-normalised so a long
completion does not explode it; optional KL to a reference policy by the k3 estimator per token::

    rho_m = exp(mean_t log pi(a_{m,t}) / pi_old(a_{m,t}))
    L     = - mean_m min(rho_m A_m, clip(rho_m, 1 +- clip) A_m) + kl_coef x mean_m KL_m
    KL_m  = mean_t exp(d_t) - d_t - 1,   d_t = log pi_ref - log pi

The surrogate is ``agents.learner.grpo_objective`` (the learner's own), here fed from a PolicyBatch.
"""

from __future__ import annotations

from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.learner import grpo_objective
from agents.objectives.batch import MissingSignals, PolicyBatch, step_mean
from market.config import STRICT

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
        d = batch.ref_logp - batch.logp
        kl = step_mean(d.exp() - d - 1, batch.mask)
    return grpo_objective(step_mean(batch.logp, batch.mask), step_mean(batch.old_logp, batch.mask),
                          batch.advantage, cfg.clip, kl, cfg.kl_coef)
