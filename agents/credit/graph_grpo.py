r"""``graph_grpo``: the outcome propagated back over the step dependency graph, with coefficients fitted per edge kind.

Each step lists the earlier steps whose output it read (``deps``); the verifier reads the ``checked`` steps (default:
the last). The outcome advantage enters at the checked steps and flows back along the read edges, each edge passing
on a share alpha_k of the credit, where k is the edge's kind (producer role -> reader role; one kind where the world
gives no roles). A step's weight is its strongest path to a checked step::

    w_s = 1                                         s checked
    w_t = max_{s reads t} alpha_{k(t,s)} w_s        else (0 where no path: a detour nothing checked depends on)
    A_{g,t} = A_g w_t                               A_g the grpo advantage

The coefficients are learned from the group: an edge kind whose use separates the better rollouts of a task from
the worse carries the outcome, one every rollout uses alike tells nothing and keeps the prior. With n_{g,k} the
edges of kind k in the part of rollout g the outcome rests on (the checked steps' dependency closure), centred over
the group, c is the ridge fit of the advantages on them (skills/credit.py's fit, one column per kind) and::

    alpha_k = min(1, prior + |c_k|)

With alpha = 1 everywhere this is depgpo (every step the checked ones depend on gets the full advantage); with
alpha = 0 only the checked steps learn. The method's coefficients are trained with the policy loss; an estimator
has no gradient path to that loss, so here they are refitted on each group, from the same advantages the loss
reads (no state to carry between rounds or to checkpoint).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import EPS, Credit, group_advantage
from agents.credit.depgpo import relevant
from market.strict import STRICT

NEEDS = frozenset({"outcome", "deps"})


@dataclass(config=STRICT)
class Config:
    prior: float = Field(0.5, ge=0, le=1)
    """alpha of an edge kind the group shows no contrast on: the share of credit a read edge passes back."""
    ridge: float = Field(1.0, gt=0)
    """Ridge of the fit of the advantages on the edge-kind counts: kinds with little contrast stay near the prior."""
    eps: float = Field(EPS, gt=0)
    """Added to the group's std (a group of equal outcomes gets 0, not a division by zero)."""


def kind(t, producer: int, reader: int) -> str:
    """An edge's kind: producer role -> reader role (one kind, "edge", where the world gives no roles)."""
    return f"{t.role[producer]} -> {t.role[reader]}" if t.role is not None else "edge"


def edges(t) -> list[tuple[int, int]]:
    """(producer, reader) read edges inside the checked steps' dependency closure."""
    keep = relevant(t)
    return [(p, s) for s in np.flatnonzero(keep).tolist() for p in t.deps[s] if 0 <= p < s]


def coefficients(group, advantage: np.ndarray, cfg: Config) -> dict[str, float]:
    """alpha per edge kind: the prior plus |ridge fit of the advantages on the centred edge-kind counts|."""
    used = [[kind(t, p, s) for p, s in edges(t)] for t in group]
    kinds = sorted({k for ks in used for k in ks})
    if not kinds:
        return {}
    n = np.array([[ks.count(k) for k in kinds] for ks in used], dtype=np.float64)  # [G, K]
    V = n - n.mean(0)
    c = np.linalg.solve(V.T @ V + cfg.ridge * np.eye(len(kinds)), V.T @ advantage)
    return {k: min(1.0, cfg.prior + abs(float(ck))) for k, ck in zip(kinds, c)}


def weights(t, alpha: dict[str, float]) -> np.ndarray:
    """[T] w_t: each step's strongest alpha-weighted path to a checked step."""
    T = len(t)
    w = np.zeros(T)
    checked = list(t.checked) if t.checked is not None else ([T - 1] if T else [])
    w[[s for s in checked if 0 <= s < T]] = 1.0
    for s in range(T - 1, -1, -1):  # a reader comes after what it read: one backward sweep settles every path
        for p in t.deps[s]:
            if 0 <= p < s:
                w[p] = max(w[p], alpha.get(kind(t, p, s), 0.0) * w[s])
    return w


def estimate(group, cfg: Config) -> Credit:
    advantage = group_advantage(group, cfg.eps)
    alpha = coefficients(group, advantage, cfg)
    return Credit([a * weights(t, alpha) for t, a in zip(group, advantage)])
