r"""``focus``: spend rollouts where they most reduce the critic's error; blend critic and rollouts.

A state c has a critic value and n Monte Carlo rollouts from it (mean m, variance sigma^2). The
value estimate shrinks the rollout mean toward the critic, as if the critic were kappa rollouts::

    V_hat(c) = kappa / (kappa + n) x critic(c) + n / (kappa + n) x m(c)          (:func:`blend`)

Its squared error is (kappa b / (kappa + n))^2 + n sigma^2 / (kappa + n)^2 with b the critic's bias
at c; minus its derivative in n is the error one more rollout from c removes::

    g(c) = [2 kappa^2 b_hat^2 + (n - kappa) sigma_hat^2] / (kappa + n)^3        (:func:`gain`)

and the next branch starts from the candidate with the largest g (:func:`choose`). FOCUS changes
where rollouts start and what the advantage is made of (the caller's credit, from V_hat), not the
surrogate: its loss is grpo's.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.objectives.grpo import Config as Grpo
from agents.objectives.grpo import loss as grpo_loss
from agents.objectives.batch import PolicyBatch
from market.config import STRICT

NEEDS = ()


@dataclass(config=STRICT)
class Config:
    grpo: Grpo = Field(default_factory=Grpo)
    """The surrogate's settings."""
    kappa: float = Field(2.0, gt=0)
    """The critic's weight in rollouts: at n = kappa rollouts, critic and rollout mean count equally."""


def blend(critic, mean, n, kappa: float) -> np.ndarray:
    """V_hat = (kappa critic + n mean) / (kappa + n), elementwise over candidate states."""
    n = np.asarray(n, dtype=np.float64)
    return (kappa * np.asarray(critic, dtype=np.float64) + n * np.asarray(mean, dtype=np.float64)) / (kappa + n)


def gain(bias, var, n, kappa: float) -> np.ndarray:
    """g(c): the critic-error reduction of one more rollout from each candidate state, given the
    critic's estimated bias there, the rollouts' variance and the n rollouts it has had."""
    b, s2, n = (np.asarray(x, dtype=np.float64) for x in (bias, var, n))
    return (2 * kappa**2 * b**2 + (n - kappa) * s2) / (kappa + n) ** 3


def choose(bias, var, n, kappa: float) -> int:
    """The candidate state to branch from next: argmax g (the first on ties)."""
    return int(np.argmax(gain(bias, var, n, kappa)))


def loss(batch: PolicyBatch, cfg: Config) -> tuple:
    return grpo_loss(batch, cfg.grpo)
