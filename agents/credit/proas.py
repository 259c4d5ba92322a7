r"""``proas``: progress-aware advantage shaping (ProAS).

A reference graph E of state transitions (s -> s') seen in successful trajectories is kept
online (``Config.reference``; each call first adds the group's successes). With A_g the grpo
advantage and p the progress of each state::

    reasonable_t = (s_t -> s_{t+1}) in E  or  p_{t+1} > p_t
    stall_k      = [p_{k+1} <= p_k]
    drift_t      = sum_{k >= t} stall_k                              future drift: stalls downstream
    A_{g,t} = A_g                                                    if A_g >= 0
            = 0                                                      if A_g < 0 and reasonable_t
            = T_g A_g drift_t / sum_{k not reasonable} drift_k       if A_g < 0 otherwise

So a failed rollout's whole penalty T_g A_g lands on its unreasonable steps, the early detours
(with the most stalled progress downstream) paying most. A failure with no unreasonable step
is not penalised. The paper's ``pruned up to 40%`` is ``Config.keep`` (fraction of edges kept).
"""

from __future__ import annotations

import zlib

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import EPS, Credit, group_advantage
from market.strict import STRICT

NEEDS = frozenset({"outcome", "state", "progress"})


@dataclass(config=STRICT)
class Config:
    eps: float = Field(EPS, gt=0)
    """Added to the group's std (a group of equal outcomes gets 0, not a division by zero)."""
    keep: float = Field(1.0, ge=0, le=1)
    """Fraction of the reference edges consulted (a deterministic hash prune; the paper: >= 0.6 still works)."""

    def __post_init__(self):
        # The online reference graph, edges (s, s') from successful trajectories: state the estimator
        # keeps, not a setting, so an attribute of each Config made (each estimator grows its own) and
        # not a field (not set from a scenario file, not stored with a run's config).
        object.__setattr__(self, "reference", set())


def _kept(edge, keep: float) -> bool:
    return keep >= 1 or zlib.crc32(repr(edge).encode()) % 1000 < keep * 1000


def _edges(t) -> list[tuple]:
    return list(zip(t.state[:-1], t.state[1:]))


def estimate(group, cfg: Config) -> Credit:
    A = group_advantage(group, cfg.eps)
    best = max(t.outcome for t in group) if group else 0.0
    for t, a in zip(group, A):
        if a > 0 or (t.outcome == best and best > 0):
            cfg.reference.update(_edges(t))
    out = []
    for t, a in zip(group, A):
        if a >= 0:
            out.append(np.full(len(t), a))
            continue
        p = np.asarray(t.progress, dtype=np.float64)
        known = np.array([e in cfg.reference and _kept(e, cfg.keep) for e in _edges(t)], dtype=bool)
        reasonable = known | (p[1:] > p[:-1])
        drift = np.cumsum((p[1:] <= p[:-1])[::-1])[::-1].astype(np.float64)
        weight = np.where(reasonable, 0.0, drift)
        total = weight.sum()
        out.append(len(t) * a * weight / total if total > 0 else np.zeros(len(t)))
    return Credit(out)
