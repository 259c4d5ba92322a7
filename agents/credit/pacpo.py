r"""``pacpo``: paired worlds that differ in one private condition; credit where their outcomes diverge.

The world pairs each problem with a copy in which one condition the agents never read is changed (a seller's
floor price, a hidden fact: ``TextWorld.pair``), and an outcome checker says what each state's standing
submission (the offer on the table, the answer so far: what the agent would submit if the episode ended now)
would pay in either world (``TextWorld.check``). That is the ``paired`` signal, c_t and c'_t per state. A
submission that pays the same in both worlds says nothing about the private condition; one that pays here and
not in the pair is fitted to this world. The potential is that divergence, and a turn's credit is its
potential-based shaping term (Ng et al.: it leaves the optimal policies unchanged), added to the outcome
advantage::

    Phi_t   = c_t - c'_t
    F_t     = gamma Phi_{t+1} - Phi_t
    A_{g,t} = A_g + beta F_t

A turn that moves neither verdict gets only A_g (with gamma = 1); a concession that reaches this world's
condition but not the pair's gets the rise; one that pays more in the pair than here loses. Not centred: the
shaping is an added reward, and over a rollout it sums to gamma^T Phi_T - Phi_0 (for gamma = 1, the final
divergence; the first state, where nothing is submitted, has Phi_0 = 0).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import EPS, Credit, group_advantage
from market.strict import STRICT

NEEDS = frozenset({"outcome", "paired"})


@dataclass(config=STRICT)
class Config:
    gamma: float = Field(1.0, ge=0, le=1)
    """The shaping's discount: 1 keeps a turn that changes nothing at zero shaping."""
    beta: float = Field(1.0, ge=0)
    """The weight of the shaping beside the outcome advantage."""
    eps: float = Field(EPS, gt=0)
    """Added to the group's std (a group of equal outcomes gets 0, not a division by zero)."""


def shaping(t, gamma: float) -> np.ndarray:
    """[T] F_t of one trajectory: the change of the paired verdicts' divergence over each turn."""
    paired = np.asarray(t.paired, dtype=np.float64).reshape(-1, 2)[: len(t) + 1]
    phi = paired[:, 0] - paired[:, 1]
    return gamma * phi[1:] - phi[:-1]


def estimate(group, cfg: Config) -> Credit:
    return Credit([a + cfg.beta * shaping(t, cfg.gamma) for t, a in zip(group, group_advantage(group, cfg.eps))])
