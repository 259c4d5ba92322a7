"""The KL to a reference policy, written once for every learner of actions and every objective.

:func:`exact_kl` where the policy is a distribution over a few actions (rule logits against the rule alone),
:func:`k3` per token where it is an LM's (against the model without adapters, or an objective's ``ref_logp``), and
:func:`penalised` adds either, weighted by ``agents.kl``, to a loss. A support module of agents/objectives (not an
objective of the registry): the objectives' surrogate (grpo.py) and the learners (agents/learners) both read it.
"""

from __future__ import annotations

import torch


def exact_kl(logp: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """[M] KL(pi || ref) of [M, A] log-probabilities over A actions, summed exactly."""
    return (logp.exp() * (logp - ref)).sum(-1)


def k3(logp: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """Per token, the k3 estimate of KL(pi || ref) from sampled tokens' log-probabilities: exp(d) - d - 1,
    d = log ref - log pi (unbiased, never negative)."""
    d = ref - logp
    return torch.exp(d) - d - 1


def penalised(loss: torch.Tensor, kl: torch.Tensor | None, coef: float) -> torch.Tensor:
    """``loss`` + coef x mean KL (``loss`` itself when the weight is 0 or there is no KL)."""
    return loss + coef * kl.mean() if kl is not None and coef else loss
