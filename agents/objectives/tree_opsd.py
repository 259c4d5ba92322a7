r"""``tree_opsd``: a tree of rollouts as a Bernoulli teacher for each step's ratio (forward KL).

Rollouts are laid out as a tree (:func:`layout`): M full rollouts, then N branches from each,
restarted from a sampled prefix of it, so that steps sharing a prefix get a value V from the leaves
below them (the caller's credit: ``batch.advantage``, V > 0 where the step raised the value). The
value becomes a Bernoulli teacher; the student is the step's length-normalised ratio squashed::

    q_m = clamp(1/2 + V_m / tau, 0, 1)
    p_m = sigmoid(mean_t log pi(a_{m,t}) / pi_old(a_{m,t}))            (1/2 on-policy)
    L   = mean_m KL(q_m || p_m) = q log(q / p) + (1 - q) log((1 - q) / (1 - p))

dL/ds = p - q (s = the mean log ratio): a step with V > 0 is pushed up until its ratio reaches
q / (1 - q), with V < 0 down, and the push stops there: a bounded target, where PPO's clip
stops the gradient instead.
"""

from __future__ import annotations

import numpy as np
import torch
from pydantic import Field
from pydantic.dataclasses import dataclass
from torch.nn import functional as F

from agents.objectives.batch import PolicyBatch, step_mean
from market.strict import STRICT

NEEDS = ()
N = 2
"""Branches from each full rollout. M, the full rollouts per task, is how many the caller lays out
(the method's default: 4)."""


@dataclass(config=STRICT)
class Config:
    tau: float = Field(4.0, gt=0)
    """Temperature of the teacher: V = +-tau / 2 gives q = 1 or 0 (group-normalised advantages: +-2 std)."""


def layout(lengths, rng: np.random.Generator, branches: int = N) -> tuple[np.ndarray, np.ndarray]:
    """The tree as indices: for each of M + M x N rollouts, (source, prefix).

    Rollouts 0..M-1 are the M full ones (source itself, prefix 0), M = len(lengths) (their step
    counts). Rollout M + i x N + j is branch j of rollout i: it replays i's first ``prefix`` steps,
    prefix ~ U{1, ..., T_i - 1} (strictly inside, so it shares a state with i and differs after it),
    and samples on from there; a one-step rollout branches at 0 (a fresh rollout).
    """
    T = np.asarray(lengths, dtype=np.int64)
    source = np.r_[np.arange(T.size), np.repeat(np.arange(T.size), branches)]
    inner = np.maximum(T[source[T.size:]], 2)
    prefix = np.where(T[source[T.size:]] > 1, rng.integers(1, inner), 0)
    return source, np.r_[np.zeros(T.size, dtype=np.int64), prefix]


def loss(batch: PolicyBatch, cfg: Config) -> tuple:
    s = step_mean(batch.logp - batch.old_logp, batch.mask)
    q = (0.5 + batch.advantage.to(s.dtype) / cfg.tau).clamp(0, 1)
    kl = torch.xlogy(q, q) + torch.xlogy(1 - q, 1 - q) - q * F.logsigmoid(s) - (1 - q) * F.logsigmoid(-s)
    value = kl.mean()
    return value, {"policy_loss": float(value.detach()), "teacher": float(q.mean()),
                   "student": float(torch.sigmoid(s).detach().mean())}
