r"""``distil``: the policy learns the verified replies it writes when told the answer: forward cross-entropy, not reverse KL.

h2sd and hint_sd pull the agent's *own* tokens towards an informed teacher (the reverse KL, on what the student
sampled). Here the teacher *writes*: the policy with the correct output at the step's state in its prompt (the
feedback) samples a reply of its own (agents/llm/privileged_pass.py ``teacher_samples``); the world's verifier keeps
the samples that do what the correct output does; and the policy, *without* the feedback, is trained to write
them (the cross-entropy of the teacher's distribution, mode-covering where the reverse KL is mode-seeking).
Verified samples only: an unverified one (the teacher copied the hint wrongly, or wandered off) is no target.
The learner samples a teacher for the steps of failed episodes (a success's own reply is already verified), so
the distillation is the failures' lesson and grpo's surrogate the rest of the update::

    L = grpo's clipped surrogate on A_m
        - beta x mean_{m in V} mean_t log pi(z_{m,t} | x_m)       (V: steps with a verified teacher sample z_m)
"""

from __future__ import annotations

from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.objectives.batch import PolicyBatch, step_mean
from agents.objectives.grpo import Config as Grpo
from agents.objectives.grpo import loss as grpo_loss
from market.strict import STRICT

NEEDS = ("teacher_sample_logp", "teacher_sample_mask", "teacher_verified")


@dataclass(config=STRICT)
class Config:
    grpo: Grpo = Field(default_factory=Grpo)
    """The surrogate's settings."""
    beta: float = Field(1.0, ge=0)
    """Weight of the cross-entropy on the verified teacher samples."""


def loss(batch: PolicyBatch, cfg: Config) -> tuple:
    surrogate, stats = grpo_loss(batch, cfg.grpo)
    kept = batch.teacher_verified.bool() & batch.teacher_sample_mask.any(1)
    nll = -step_mean(batch.teacher_sample_logp, batch.teacher_sample_mask)[kept]
    cross_entropy = nll.mean() if nll.numel() else surrogate.new_zeros(())
    sampled = int(batch.teacher_sample_mask.any(1).sum())
    stats.update(teacher_samples=float(sampled), teacher_verified=float(kept.sum()),
                 teacher_nll=float(cross_entropy.detach()))
    return surrogate + cfg.beta * cross_entropy, stats
