r"""``hint_sd``: feedback written just before the steps that failed, and only those distilled, by a slow teacher.

An analyser locates the actions a failure is about and writes feedback inserted just before each; the policy is
distilled towards what it would write with that feedback in context, at those actions alone. Here the fault
locator is the world's (agents/llm/privileged_pass.py ``located``): a step of a failed episode whose reply does not do
what the correct output at its state does. The feedback is that correct output, appended to what the agent read,
just before its reply. The teacher is an exponential moving average of the policy's weights (agents/learners/ema_weights.py,
decay ``ema``), so the target moves slower than the student it trains; it rescores the agent's own tokens with the
feedback in context (``hint_logp``), and the located steps are pulled towards it by the reverse KL on them
(privileged.py ``reverse_kl``, h2sd's failure branch); every other step gets grpo's surrogate alone::

    L = grpo's clipped surrogate on A_m
        + beta x mean_{m located} mean_t sg(log pi(y_t) - log q_ema(y_t | x, feedback)) log pi(y_t)
"""

from __future__ import annotations

from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.objectives.batch import PolicyBatch
from agents.objectives.grpo import Config as Grpo
from agents.objectives.grpo import loss as grpo_loss
from agents.objectives.privileged import reverse_kl
from market.strict import STRICT

NEEDS = ("hint_logp", "located")


@dataclass(config=STRICT)
class Config:
    grpo: Grpo = Field(default_factory=Grpo)
    """The surrogate's settings."""
    beta: float = Field(1.0, ge=0)
    """Weight of the located steps' reverse KL to the hinted EMA teacher."""
    ema: float = Field(0.9, ge=0, lt=1)
    """The teacher's weights: ema x themselves + (1 - ema) x the policy's, after each update (0: the policy's own,
    as of the last update); read by the LoRA learner (agents/learners/lm_grpo.py), which keeps them."""


def loss(batch: PolicyBatch, cfg: Config) -> tuple:
    surrogate, stats = grpo_loss(batch, cfg.grpo)
    located = batch.located.bool()
    distil, gap = reverse_kl(batch, batch.hint_logp, located)
    stats.update(located=float(located.sum()), hint_reverse_kl=gap)
    return surrogate + cfg.beta * distil, stats
