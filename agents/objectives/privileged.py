r"""Privileged log-ratio reweighting and belief in the gold answer: the mechanisms batch C's objectives share.

A privileged pass (agents/backends/base.py ``forced``) scores the tokens an agent sampled a second time, by the
same policy, under a prompt holding what the agent did not see (the correct output at its state, the episode's
outcome, a failed sibling's answer). Where the informed policy finds a token likelier than the agent did, the
token agrees with what the information says; where it finds it less likely, the token is what the information
argues against. The gap, stop-grad, is evidence *which* turn or token earned the outcome, never *whether* the
episode did: each method here only redistributes the credit estimator's advantage (its sign kept), and the
clipped surrogate of grpo then moves the policy on the redistributed advantage.

An episode's steps come in time order within the batch (the LM learner lays them out so: agents/learners/lm_grpo.py).
"""

from __future__ import annotations

import dataclasses

import torch

from agents.objectives.batch import PolicyBatch, step_mean
from agents.objectives.grpo import Config as Grpo
from agents.objectives.grpo import loss as grpo_loss


def gap(informed: torch.Tensor, batch: PolicyBatch) -> torch.Tensor:
    """[M, L] log pi(y_t | x, information) - log pi(y_t | x), stop-grad, 0 on padding."""
    return torch.where(batch.mask, informed.detach() - batch.logp.detach(), 0)


def episodes(batch: PolicyBatch):
    """Each episode's step indices [k], in time order (the batch's row order)."""
    for e in torch.unique(batch.episode):
        yield torch.nonzero(batch.episode == e)[:, 0]


def mean_one(raw: torch.Tensor, batch: PolicyBatch, tokens: bool = False) -> torch.Tensor:
    """[M] non-negative turn weights rescaled per episode to mean 1 (``tokens``: token-weighted mean 1,
    sum_m n_m w_m = sum_m n_m); an episode whose weights are all 0 keeps 1: the advantage is redistributed,
    its total per episode unchanged."""
    n = batch.mask.sum(1).to(raw.dtype) if tokens else torch.ones_like(raw)
    out = torch.ones_like(raw)
    for rows in episodes(batch):
        total = (n[rows] * raw[rows]).sum()
        if total > 0:
            out[rows] = raw[rows] * n[rows].sum() / total
    return out


def reweighted(batch: PolicyBatch, weight: torch.Tensor, cfg: Grpo) -> tuple:
    """grpo's clipped step surrogate on the advantage times the (detached) step weights [M]."""
    return grpo_loss(dataclasses.replace(batch, advantage=batch.advantage * weight.detach().to(batch.advantage.dtype)), cfg)


def turn_gap(informed: torch.Tensor, batch: PolicyBatch, mean: bool = False) -> torch.Tensor:
    """[M] each step's gap summed over its tokens (``mean``: averaged)."""
    g = gap(informed, batch)
    return step_mean(g, batch.mask) if mean else g.sum(1)


def reverse_kl(batch: PolicyBatch, teacher: torch.Tensor, rows: torch.Tensor) -> tuple[torch.Tensor, float]:
    r"""Distillation of the ``rows`` [M] bool towards the ``teacher`` [M, L] by the reverse KL on the agent's own tokens
    (h2sd's failures, hint_sd's located steps): (its score-function estimate, mean over the rows of each step's
    mean per-token KL estimate; 0 and 0.0 with no row). The gradient of KL(pi || q) is
    E_pi[(log pi - log q) grad log pi], so a token the teacher finds likelier than the agent did goes up, the
    others down::

        L = mean_{m in rows} mean_t sg(log pi(y_t) - log q(y_t)) log pi(y_t)
    """
    gap = torch.where(batch.mask, batch.logp.detach() - teacher.detach(), 0)
    kl = step_mean(gap * batch.logp, batch.mask)[rows]
    if not kl.numel():
        return batch.logp.new_zeros(()), 0.0
    return kl.mean(), float(step_mean(gap, batch.mask)[rows].mean())


def belief_gain(batch: PolicyBatch) -> torch.Tensor:
    """[M] how much each step's reply moved the policy's belief in the gold answer (stop_segment, rredcot):
    belief_after - belief_before, stop-grad."""
    return (batch.belief_after - batch.belief_before).detach().to(batch.advantage.dtype)
