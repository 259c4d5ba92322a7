r"""``sid_span``: a success's advantage goes only to the search queries that hit (and the steps that are no query).

A frozen retriever runs each query a step issues; the world says whether it returned a gold clue within its cutoff
(``hit``: 1 it did, 0 it did not, -1 the step issued no query). In a rollout with positive advantage the credit for
retrieval is routed to the spans of the queries that hit; a query that missed contributed nothing to the success
and gets none. Rollouts at or below their group's mean keep grpo's advantage on every step (a miss there is no
less to blame than the rest)::

    A_{g,t} = A_g [hit_t != 0]    if A_g > 0
            = A_g                 otherwise
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
    eps: float = Field(EPS, gt=0)
    """Added to the group's std (a group of equal outcomes gets 0, not a division by zero)."""


def estimate(group, cfg: Config) -> Credit:
    out = []
    for t, a in zip(group, group_advantage(group, cfg.eps)):
        hit = np.asarray(t.hit, dtype=np.int64).reshape(len(t))
        out.append(np.full(len(t), a) * (hit != 0) if a > 0 else np.full(len(t), a))
    return Credit(out)
