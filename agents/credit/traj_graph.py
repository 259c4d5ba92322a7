r"""``traj_graph``: merge the group's trajectories into one state graph, back up the outcome (graph GAE).

Nodes are canonical state keys (exact match). Over the group, n(s) counts s's occurrences
that are left by a step or end a trajectory; with N(s, s') the steps s -> s' and O(s) the
summed outcomes of trajectories ending in s, the node values solve the Bellman backup
(gamma = 1; every trajectory ends, so the system is non-singular)::

    V(s) = [ sum_{s'} N(s, s') V(s') + O(s) ] / n(s)
    a_{g,t} = V(s_{g,t+1}) - V(s_{g,t})
    A_{g,t} = (a_{g,t} - mean_{edges leaving s_{g,t}} a) / (std_{edges leaving s_{g,t}} a + eps)

(on a node left by only one kind of edge the normalised advantage is 0).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import EPS, Credit, split
from market.strict import STRICT

NEEDS = frozenset({"outcome", "state"})


@dataclass(config=STRICT)
class Config:
    eps: float = Field(EPS, gt=0)
    """Added to the std of the edges leaving a state (a state whose edges are all alike gives 0, not a
    division by zero)."""
    normalise: bool = True
    """False: return the raw a = V(s') - V(s)."""


def values(group) -> tuple[dict, np.ndarray]:
    keys = {s: i for i, s in enumerate(dict.fromkeys(s for t in group for s in t.state))}
    S = len(keys)
    N, n, O = np.zeros((S, S)), np.zeros(S), np.zeros(S)
    for t in group:
        idx = np.array([keys[s] for s in t.state])
        np.add.at(N, (idx[:-1], idx[1:]), 1.0)
        np.add.at(n, idx[:-1], 1.0)
        n[idx[-1]] += 1.0
        O[idx[-1]] += t.outcome
    V = np.linalg.solve(np.diag(n) - N, O)
    return keys, V


def estimate(group, cfg: Config) -> Credit:
    keys, V = values(group)
    src = np.concatenate([[keys[s] for s in t.state[:-1]] for t in group]).astype(np.int64)
    dst = np.concatenate([[keys[s] for s in t.state[1:]] for t in group]).astype(np.int64)
    a = V[dst] - V[src]
    if cfg.normalise and a.size:
        S = len(keys)
        cnt = np.bincount(src, minlength=S)
        mean = np.bincount(src, a, S) / np.maximum(cnt, 1)
        var = np.bincount(src, (a - mean[src]) ** 2, S) / np.maximum(cnt, 1)
        a = (a - mean[src]) / (np.sqrt(var[src]) + cfg.eps)
    return Credit(split(group, a))
