r"""``casi``: set interventions on a step's sub-actions, Shapley aggregation, bounded zero-sum shaping (CASI).

Step t of rollout g has m sub-actions and a cached result v(S) for every coalition S of them
(the world's evaluator, run on each subset). Exact Shapley value of sub-action i (m <= 5)::

    phi_i = sum_{S not containing i} |S|! (m - |S| - 1)! / m! [v(S + i) - v(S)]

The step's score is the sum of its sub-actions' values, s_t = sum_i phi_i (= v(all) - v(none)).
Shaping, bounded and zero-sum per rollout::

    x_{g,t} = s_{g,t} - mean_t s_{g,t}                          centre within the rollout
    x_{g,t} = x_{g,t} kappa / (2 std_{g,t} x + eps)              one scale shared by the group
    x_g     = argmin ||y - x_g||  s.t.  sum_t y_t = 0, |y_t| <= kappa     (projection; by bisection)
    A_{g,t} = A_g + x_{g,t}

so the trajectory's total advantage is A_g T_g as in grpo. ``Credit.skills`` maps
(trajectory, step, sub-action) to phi.
"""

from __future__ import annotations

from itertools import combinations
from math import factorial

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import EPS, Credit, group_advantage
from market.strict import STRICT

NEEDS = frozenset({"outcome", "results"})


@dataclass(config=STRICT)
class Config:
    kappa: float = Field(0.5, gt=0)
    """Bound of the zero-sum shaping: |x_{g,t}| <= kappa."""
    eps: float = Field(EPS, gt=0)
    """Added to the group's std of outcomes and to the scale of its step scores (no division by zero)."""


def shapley(v: np.ndarray) -> np.ndarray:
    """[2^m] coalition values by bitmask -> [m] exact Shapley values."""
    v = np.asarray(v, dtype=np.float64)
    m = round(np.log2(v.size)) if v.size else 0
    phi = np.zeros(m)
    for i in range(m):
        others = [j for j in range(m) if j != i]
        for k in range(m):
            w = factorial(k) * factorial(m - k - 1) / factorial(m)
            for S in combinations(others, k):
                mask = sum(1 << j for j in S)
                phi[i] += w * (v[mask | 1 << i] - v[mask])
    return phi


def project(x: np.ndarray, kappa: float) -> np.ndarray:
    """Euclidean projection onto {sum y = 0, |y| <= kappa}: y = clip(x - tau), tau by bisection."""
    if x.size == 0:
        return x
    lo, hi = x.min() - kappa, x.max() + kappa
    for _ in range(60):
        tau = (lo + hi) / 2
        if np.clip(x - tau, -kappa, kappa).sum() > 0:
            lo = tau
        else:
            hi = tau
    return np.clip(x - (lo + hi) / 2, -kappa, kappa)


def estimate(group, cfg: Config) -> Credit:
    A = group_advantage(group, cfg.eps)
    skills, scores = {}, []
    for g, t in enumerate(group):
        s = np.zeros(len(t))
        for step, v in enumerate(t.results):
            phi = shapley(v)
            s[step] = phi.sum()
            skills.update({(g, step, i): float(p) for i, p in enumerate(phi)})
        scores.append(s - s.mean() if s.size else s)
    every = np.concatenate(scores) if scores else np.zeros(0)
    scale = 2 * every.std() + cfg.eps if every.size else 1.0
    steps = [a + project(x * cfg.kappa / scale, cfg.kappa) for a, x in zip(A, scores)]
    return Credit(steps, skills)
