r"""``h2sd``: hindsight self-distillation, split by outcome: successes reweighted by the teacher, failures pulled to it.

The teacher is the policy with the correct output at the step's state in its prompt (a privileged pass,
agents/objectives/privileged.py). A success's step is scaled by how probable the informed teacher finds it
(its per-token likelihood, normalised to mean 1 over the batch's successes: a lucky success the teacher would
not have written counts less); a failure's step is distilled towards the hinted teacher by the reverse KL
on the agent's own tokens (privileged.py ``reverse_kl``, shared with hint_sd: tokens the teacher finds likelier
than the agent did go up, the others down)::

    w_m   = exp(mean_t log q(y_t)) / mean_{k in S} exp(mean_t log q(y_k,t))        m in S (successes)
    L     = grpo's clipped surrogate on A_m w_m  over S
            + beta x mean_{m in F} mean_t sg(log pi(y_t) - log q(y_t)) log pi(y_t)  (F: failures)

The rephrased teacher of the method (the reference rewritten in the policy's words) is the teacher's own
prompt here: the world's correct output, as it states it.
"""

from __future__ import annotations

import torch
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.objectives.batch import PolicyBatch, step_mean
from agents.objectives.grpo import Config as Grpo
from agents.objectives.privileged import reverse_kl, reweighted
from market.strict import STRICT

NEEDS = ("teacher_logp",)


@dataclass(config=STRICT)
class Config:
    grpo: Grpo = Field(default_factory=Grpo)
    """The surrogate's settings (successes)."""
    beta: float = Field(1.0, ge=0)
    """Weight of the failures' reverse KL to the hinted teacher."""


def loss(batch: PolicyBatch, cfg: Config) -> tuple:
    success = batch.outcome > 0.5
    teacher = batch.teacher_logp.detach()
    likelihood = step_mean(teacher, batch.mask).exp()
    weight = torch.where(success, likelihood / likelihood[success].mean() if success.any() else likelihood, 0)
    surrogate, stats = reweighted(batch, weight, cfg.grpo)
    distil, gap = reverse_kl(batch, teacher, ~success)
    stats.update(reverse_kl=gap, success_weight_max=float(weight.max()))
    return surrogate + cfg.beta * distil, stats
