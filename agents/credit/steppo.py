r"""``steppo``: the step as the unit of the MDP (StepPO): GAE over steps, a length-normalised ratio.

Return-to-go over steps with step rewards r_{g,t} and the outcome R_g paid after the last step::

    G_{g,t} = sum_{k >= t} gamma^{k-t} r_{g,k} + gamma^{T_g - t} R_g
    A_{g,t} = (G_{g,t} - mean_{g'} G_{g',t}) / (std_{all g, t} G + eps)

The baseline is the group's mean return at the same step index (over the rollouts that reach
it): with gamma = 1, lambda = 1, no step rewards and equal lengths this is exactly grpo. The objective's ratio
is per step, length normalised (geometric mean over the step's tokens)::

    rho_{g,t} = exp((logp_{g,t} - logp_old_{g,t}) / tokens_{g,t})       (:func:`ratio`)
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import EPS, Credit
from market.strict import STRICT

NEEDS = frozenset({"outcome", "logp"})


@dataclass(config=STRICT)
class Config:
    gamma: float = Field(1.0, ge=0, le=1)
    """Discount per step."""
    eps: float = Field(EPS, gt=0)
    """Added to the std of the group's returns-to-go (a group of equal returns gets 0, not a division by zero)."""


def returns(t, gamma: float) -> np.ndarray:
    T = len(t)
    r = np.zeros(T) if t.reward is None else np.asarray(t.reward, dtype=np.float64)
    disc = gamma ** np.arange(T)
    tail = np.cumsum((r * disc)[::-1])[::-1] / np.maximum(disc, 1e-300)
    return tail + t.outcome * gamma ** (T - np.arange(T))


def estimate(group, cfg: Config) -> Credit:
    G = [returns(t, cfg.gamma) for t in group]
    T = max((len(g) for g in G), default=0)
    padded = np.full((len(G), T), np.nan)
    for i, g in enumerate(G):
        padded[i, : len(g)] = g
    with np.errstate(invalid="ignore"):
        base = np.nanmean(padded, axis=0) if T else np.zeros(0)
    flat = np.concatenate(G) if G else np.zeros(0)
    scale = flat.std() + cfg.eps if flat.size else 1.0
    return Credit([(g - base[: len(g)]) / scale for g in G])


def ratio(logp, logp_old, tokens=None) -> np.ndarray:
    """rho = exp(mean log ratio over the step's tokens), from summed log-probs per step."""
    n = 1.0 if tokens is None else np.maximum(np.asarray(tokens, dtype=np.float64), 1)
    return np.exp((np.asarray(logp, dtype=np.float64) - np.asarray(logp_old, dtype=np.float64)) / n)
