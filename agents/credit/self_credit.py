r"""``self_credit``: the turns a compaction cites carry the outcome's advantage; a failing retrieval that failed siblings repeat carries more.

In a world whose context must be compacted (scenarios/longlookup.py), the policy itself says which earlier turns
matter: at a compaction it cites the turns to keep (the world enforces the method's 2 to 5 citations, at most the
context less one). Each step says whether a compaction cited it (``cited``: 1 cited by some compaction, 0 in the
context at a compaction and dropped, -1 a step that searched nothing, or a turn after the last compaction, which no
compaction judged) and the ids its search retrieved (``retrieved``). The group-normalised outcome advantage goes to
the cited turns and to every step no compaction judged (the compaction itself, the answer, the last searches); a
dropped turn keeps the share lambda of it (0.25), whichever its sign: the policy said the turn did not matter::

    A_g     = (r_g - mean r) / (std r + eps)
    w_{g,t} = lambda    if cited_{g,t} = 0
            = 1         otherwise

Steps are matched across the group by the Jaccard similarity of their retrieved ids, J(a, b) = |a & b| / |a | b|
(a match: J >= tau, 0.5). A search of a rollout below its group's mean repeats a failing retrieval when it matches a
search of another rollout below the mean and none of a rollout above it (a retrieval a success also made is not the
failure's cause); its weight is multiplied by rho (1.5), so the failure's negative advantage lands harder there::

    repeat_{g,t} = A_g < 0  and  some h != g with A_h < 0 has a search s with J(R_{g,t}, R_{h,s}) >= tau
                            and  no h with A_h > 0 has one
    A_{g,t}      = A_g w_{g,t} rho^[repeat_{g,t}]

The method anneals rho from 1.5 to 1.0 over training; an estimator sees one group, not the training clock, so rho
is the configured constant (set it to 1.0 for the anneal's end), as cepo keeps its lambda.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import EPS, Credit, group_advantage
from market.strict import STRICT

NEEDS = frozenset({"outcome", "cited", "retrieved"})


@dataclass(config=STRICT)
class Config:
    dropped: float = Field(0.25, ge=0, le=1)
    """Share of its rollout's advantage a turn a compaction dropped keeps (lambda)."""
    jaccard: float = Field(0.5, gt=0, le=1)
    """Two searches match when the Jaccard similarity of their retrieved ids is at least this (tau)."""
    repeat: float = Field(1.5, ge=1)
    """Weight of a failure's search that repeats a failing retrieval (rho)."""
    eps: float = Field(EPS, gt=0)
    """Added to the group's std (a group of equal outcomes gets 0, not a division by zero)."""


def jaccard(a: frozenset, b: frozenset) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def estimate(group, cfg: Config) -> Credit:
    adv = group_advantage(group, cfg.eps)
    searches = [[frozenset(ids) for ids in t.retrieved] for t in group]

    def matched(g: int, ids: frozenset, sign: int) -> bool:
        """Whether a search of another rollout whose advantage has ``sign`` retrieved what ``ids`` did."""
        return any(jaccard(ids, other) >= cfg.jaccard for h, own in enumerate(searches)
                   if h != g and np.sign(adv[h]) == sign for other in own if other)

    out = []
    for g, t in enumerate(group):
        w = np.where(np.asarray(t.cited, dtype=np.int64).reshape(len(t)) == 0, cfg.dropped, 1.0)
        if adv[g] < 0:
            repeat = [bool(ids) and matched(g, ids, -1) and not matched(g, ids, 1) for ids in searches[g]]
            w = w * np.where(repeat, cfg.repeat, 1.0)
        out.append(adv[g] * w)
    return Credit(out)
