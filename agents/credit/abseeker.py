r"""``abseeker``: a rubric scores each search step against the clue chain; a discounted step advantage joins the outcome's.

Backtracking from the answer to the clues it rests on, a step is judged by what it retrieved: a query that found a
gold clue within the retriever's cutoff scores ``right`` (+0.8), one that found none scores ``wrong`` (-0.8: it led
away from the chain), a step that issued no query 0 (``hit``: 1, 0, -1). Each step's process value is its own score
plus the later ones', discounted by gamma (0.25: mostly its own), centred over the group's steps so it redistributes
the credit rather than adding a constant::

    s_t     = right [hit_t = 1] + wrong [hit_t = 0]
    v_t     = sum_{k >= t} gamma^(k - t) s_k
    A_{g,t} = A_g + (v_t - mean over the group's steps of v)

The method's other half, supervised fine-tuning on the steps weighted by sigmoid(score), is a second loss beside
the policy's, which a credit estimator does not hold.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import EPS, Credit, group_advantage
from market.strict import STRICT

NEEDS = frozenset({"outcome", "hit"})


@dataclass(config=STRICT)
class Config:
    gamma: float = Field(0.25, ge=0, le=1)
    """Discount of the later steps' rubric scores in a step's process value."""
    right: float = Field(0.8, ge=0)
    """Rubric score of a query that retrieved a gold clue."""
    wrong: float = Field(-0.8, le=0)
    """Rubric score of a query that retrieved none."""
    eps: float = Field(EPS, gt=0)
    """Added to the group's std (a group of equal outcomes gets 0, not a division by zero)."""


def value(t, cfg: Config) -> np.ndarray:
    """[T] v_t: each step's rubric score plus the later ones', discounted."""
    hit = np.asarray(t.hit, dtype=np.int64).reshape(len(t))
    score = np.where(hit == 1, cfg.right, np.where(hit == 0, cfg.wrong, 0.0))
    v = np.zeros(len(t))
    for k in range(len(t) - 1, -1, -1):
        v[k] = score[k] + (cfg.gamma * v[k + 1] if k + 1 < len(t) else 0.0)
    return v


def estimate(group, cfg: Config) -> Credit:
    values = [value(t, cfg) for t in group]
    every = np.concatenate(values) if values else np.zeros(0)
    centre = every.mean() if every.size else 0.0
    return Credit([a + (v - centre) for v, a in zip(values, group_advantage(group, cfg.eps))])
