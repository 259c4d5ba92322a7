r"""``sero``: supervision from an executable oracle, continued from the states the policy reached.

Where the world has an oracle (a solver, a scripted expert) it is run from the state a step acted
on; its continuation is scored under the current policy and imitated, weighted by how likely the
frozen policy already found the oracle's prefix (w_m = its likelihood, detached): an oracle far from
what the policy would do is a distant target and counts less::

    L = L_grpo - coef x sum_{m in O} w_m x mean_t log pi(o_{m,t}) / |O|

with O the steps that have an oracle continuation (any real ``oracle_mask`` token).
"""

from __future__ import annotations

from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.objectives.batch import PolicyBatch, step_mean
from agents.objectives.grpo import Config as Grpo
from agents.objectives.grpo import loss as grpo_loss
from market.strict import STRICT

NEEDS = ("oracle_logp", "oracle_mask", "oracle_weight")


@dataclass(config=STRICT)
class Config:
    grpo: Grpo = Field(default_factory=Grpo)
    """The surrogate's settings."""
    coef: float = Field(0.1, ge=0)
    """lambda_O: the weight of the oracle's supervised term."""


def loss(batch: PolicyBatch, cfg: Config) -> tuple:
    value, stats = grpo_loss(batch, cfg.grpo)
    has = batch.oracle_mask.any(1)
    ll = step_mean(batch.oracle_logp, batch.oracle_mask)
    aux = -(batch.oracle_weight.detach() * ll)[has].sum() / has.sum().clamp(min=1)
    stats.update(oracle_loss=float(aux.detach()), oracle_steps=float(has.sum()))
    return value + cfg.coef * aux, stats
