r"""``focus``: spend rollouts where they most reduce the critic's error; blend critic and rollouts.

A state c has a critic value and n Monte Carlo rollouts from it (mean m, variance sigma^2). The
value estimate shrinks the rollout mean toward the critic, as if the critic were kappa rollouts::

    V_hat(c) = kappa / (kappa + n) x critic(c) + n / (kappa + n) x m(c)          (:func:`blend`)

Its squared error is (kappa b / (kappa + n))^2 + n sigma^2 / (kappa + n)^2 with b the critic's bias
at c; minus its derivative in n is the error one more rollout from c removes::

    g(c) = [2 kappa^2 b_hat^2 + (n - kappa) sigma_hat^2] / (kappa + n)^3        (:func:`gain`)

and the next branch starts from the candidate with the largest g (:func:`plan`). FOCUS changes
where rollouts start and what the advantage is made of, not the surrogate: its loss is grpo's on

    A_m = R_m - V_hat(s_m),  critic(s) = sigmoid(``value_logits`` at the step's first token),
    n(s), m(s) = the rollouts of the step's group that acted in state s (``state`` ids), their mean outcome

plus critic_coef x the critic's BCE on R. Where the world can restart from an inner state
(``agents.branches``), the round's branches start from the states :func:`plan` picks among those its
full rollouts reached (agents/learners/policy.py), so n(s) grows where the critic is least trusted; elsewhere
the rollouts are the group's G.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from pydantic import Field
from pydantic.dataclasses import dataclass
from torch.nn import functional as F

from agents.objectives.batch import PolicyBatch
from agents.objectives.grpo import Config as Grpo
from agents.objectives.grpo import loss as grpo_loss
from market.strict import STRICT

NEEDS = ("value_logits", "state")


@dataclass(config=STRICT)
class Config:
    grpo: Grpo = Field(default_factory=Grpo)
    """The surrogate's settings."""
    kappa: float = Field(2.0, gt=0)
    """The critic's weight in rollouts: at n = kappa rollouts, critic and rollout mean count equally."""
    critic_coef: float = Field(0.5, ge=0)
    """Weight of the critic's BCE in the summed loss."""


def blend(critic, mean, n, kappa: float):
    """V_hat = (kappa critic + n mean) / (kappa + n), elementwise over candidate states (tensors or array-likes)."""
    if not torch.is_tensor(critic):
        critic, mean, n = (np.asarray(x, dtype=np.float64) for x in (critic, mean, n))
    return (kappa * critic + n * mean) / (kappa + n)


def gain(bias, var, n, kappa: float) -> np.ndarray:
    """g(c): the critic-error reduction of one more rollout from each candidate state, given the
    critic's estimated bias there, the rollouts' variance and the n rollouts it has had."""
    b, s2, n = (np.asarray(x, dtype=np.float64) for x in (bias, var, n))
    return (2 * kappa**2 * b**2 + (n - kappa) * s2) / (kappa + n) ** 3


def plan(bias, var, n, kappa: float, k: int, state) -> np.ndarray:
    """[k] the candidates to branch from, one after another: each time argmax g (the first on ties), after
    which every candidate of the same ``state`` id counts one rollout more (its outcome still unknown: the
    bias and variance stay). A state picked often is one whose critic error one rollout barely reduces."""
    n, state = np.array(n, dtype=np.float64), np.asarray(state)
    picks = np.empty(k, dtype=np.int64)
    for i in range(k):
        picks[i] = np.argmax(gain(bias, var, n, kappa))
        n[state == state[picks[i]]] += 1
    return picks


def rollouts_from(batch: PolicyBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """[M] n(s_m), m(s_m): how many rollouts of step m's group acted in its state, and their mean outcome."""
    _, where = torch.unique(torch.stack([batch.group, batch.state]), dim=1, return_inverse=True)  # (group, state)
    visits, visit = torch.unique(torch.stack([where, batch.episode]), dim=1, return_inverse=True)  # (.., rollout)
    outcome = torch.zeros(visits.shape[1], dtype=batch.outcome.dtype, device=visit.device).scatter(0, visit, batch.outcome)
    n = torch.bincount(visits[0], minlength=int(where.max()) + 1).to(outcome.dtype)
    total = torch.zeros_like(n).index_add(0, visits[0], outcome)
    return n[where], (total / n)[where]


def loss(batch: PolicyBatch, cfg: Config) -> tuple:
    first = batch.mask.to(torch.int8).argmax(1, keepdim=True)  # each step's first real token: its state's value
    c = batch.value_logits.gather(1, first)[:, 0]
    n, mean = rollouts_from(batch)
    outcome = batch.outcome.to(c.dtype)
    value = blend(torch.sigmoid(c).detach(), mean, n, cfg.kappa)
    policy, stats = grpo_loss(dataclasses.replace(batch, advantage=outcome - value), cfg.grpo)
    critic = F.binary_cross_entropy_with_logits(c, outcome)
    stats.update(critic_loss=float(critic.detach()), value=float(value.mean()), rollouts=float(n.mean()))
    return policy + cfg.critic_coef * critic, stats
