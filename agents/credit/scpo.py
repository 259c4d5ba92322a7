r"""``scpo``: a failed step that resembles a successful sibling's step is not blamed (SCPO).

Successful rollouts: A_g > 0 (grpo advantage). For a step of any other rollout, with unit
embeddings e (MiniLM; agents/learners/bid_head.py ``Embedder``) and the successful steps S::

    sim_{g,t} = max_{s in S} e_{g,t} . e_s
    A_{g,t}   = sim_{g,t} mean_{g' successful} A_{g'}     if sim_{g,t} >= tau        (tau = 0.9)
              = A_g                                       otherwise

Successful rollouts keep A_g at every step.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import EPS, Credit, group_advantage
from market.strict import STRICT

NEEDS = frozenset({"outcome", "embedding"})


@dataclass(config=STRICT)
class Config:
    tau: float = Field(0.9, ge=-1, le=1)
    """Cosine similarity above which a failed step is credited like the successful one it resembles."""
    eps: float = Field(EPS, gt=0)
    """Added to the group's std (a group of equal outcomes gets 0, not a division by zero)."""


def estimate(group, cfg: Config) -> Credit:
    A = group_advantage(group, cfg.eps)
    good = [np.asarray(t.embedding, dtype=np.float64).reshape(len(t), -1) for t, a in zip(group, A) if a > 0 and len(t)]
    out = [np.full(len(t), a) for t, a in zip(group, A)]
    if not good or sum(len(e) for e in good) == 0:
        return Credit(out)
    S, credit = np.concatenate(good), float(A[A > 0].mean())
    for i, (t, a) in enumerate(zip(group, A)):
        if a > 0 or len(t) == 0:
            continue
        sim = (np.asarray(t.embedding, dtype=np.float64).reshape(len(t), -1) @ S.T).max(1)
        out[i] = np.where(sim >= cfg.tau, sim * credit, a)
    return Credit(out)
