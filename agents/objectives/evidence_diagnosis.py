r"""``evidence_diagnosis``: locate a failure's faulty steps by belief drift and grounding, rewrite them against a rubric, penalise harmful drift.

Three parts, in one loss.

(a) **Locate.** A step's drift is what its reply did to the policy's posterior belief in the episode's gold final
answer (the privileged pass's ``belief_before`` and ``belief_after``, agents/objectives/privileged.py
``belief_gain``); its grounding is the share of its reply's content words and numbers found in what its agent read
(agents/llm/privileged_pass.py ``grounding``). A step of a failed episode is faulty where its reply lowered the belief
(d < 0) or claims what its input does not say (grounding below ``threshold``).

(b) **Rewrite (supervised).** For the steps of failed episodes the policy samples a rewrite with the world's rubric
for the step in its prompt (what a good reply does there, not the reply: scenarios/text/world.py ``rubric``); a located
step's rewrite is a target where it is whole and itself grounded (a rewrite that invents a value is no lesson), and
the policy *without* the rubric is trained to write it by forward cross-entropy, weight ``beta`` (distil's update; its
targets come from criteria, not from the answer, so no verifier judges them).

(c) **RL.** grpo's clipped surrogate, with every step whose reply lowered the belief penalised by ``lam`` x |d|,
success or failure. Not centred: the term is a penalty on harmful drift, not a redistribution; centring it within a
group would raise the advantage of every step that drifted less, paying steps for a fault they did not avoid, and
the test that only harmful steps move would no longer hold::

    d_m   = belief_after_m - belief_before_m
    F     = {m : outcome_m fails and (d_m < 0 or grounding_m < threshold)}
    V     = {m in F : m has a rewrite z_m with grounding(z_m) >= threshold}
    A'_m  = A_m - lam x max(-d_m, 0)
    L     = grpo's clipped surrogate on A' - beta x mean_{m in V} mean_t log pi(z_{m,t} | x_m)
"""

from __future__ import annotations

import dataclasses

import torch
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.objectives.batch import PolicyBatch, step_mean
from agents.objectives.grpo import Config as Grpo
from agents.objectives.grpo import loss as grpo_loss
from agents.objectives.privileged import belief_gain
from market.strict import STRICT

NEEDS = ("belief_before", "belief_after", "grounding", "rubric_sample_logp", "rubric_sample_mask",
         "rubric_sample_grounding")


@dataclass(config=STRICT)
class Config:
    grpo: Grpo = Field(default_factory=Grpo)
    """The surrogate's settings."""
    beta: float = Field(1.0, ge=0)
    """Weight of the cross-entropy on the located steps' grounded rewrites."""
    lam: float = Field(1.0, ge=0)
    """Advantage lost per nat of harmful drift (the gold answer's mean per-token log-probability lowered by a reply)."""
    threshold: float = Field(1.0, ge=0, le=1)
    """Grounding below this locates a failed step (1: a single content word or number the agent never read); a
    rewrite below it is no target."""


def locate(batch: PolicyBatch, cfg: Config) -> torch.Tensor:
    """[M] bool: the faulty steps, (a) of the module docstring."""
    failed = ~(batch.outcome > 0)
    return failed & ((belief_gain(batch) < 0) | (batch.grounding < cfg.threshold))


def penalised(batch: PolicyBatch, cfg: Config) -> torch.Tensor:
    """[M] A' = A - lam x max(-d, 0): only the steps that lowered the belief lose advantage, (c)."""
    return batch.advantage - cfg.lam * (-belief_gain(batch)).clamp(min=0)


def loss(batch: PolicyBatch, cfg: Config) -> tuple:
    surrogate, stats = grpo_loss(dataclasses.replace(batch, advantage=penalised(batch, cfg)), cfg.grpo)
    faulty = locate(batch, cfg)
    written = batch.rubric_sample_mask.any(1)
    kept = faulty & written & (batch.rubric_sample_grounding >= cfg.threshold)
    nll = -step_mean(batch.rubric_sample_logp, batch.rubric_sample_mask)[kept]
    cross_entropy = nll.mean() if nll.numel() else surrogate.new_zeros(())
    drift = belief_gain(batch)
    stats.update(located=float(faulty.sum()), rubric_samples=float(written.sum()), rewrites=float(kept.sum()),
                 mean_drift=float(drift.mean()), harmful_drift=float((drift < 0).sum()),
                 ungrounded=float((batch.grounding < cfg.threshold).sum()), rewrite_nll=float(cross_entropy.detach()))
    return surrogate + cfg.beta * cross_entropy, stats
