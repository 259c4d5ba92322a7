r"""``workrover_vtca``: a deterministic checker's per-turn progress, shared with the earlier turns it builds on.

A partial-progress checker scores every state (``progress`` in [0, 1]: the share of the task's checks that
pass). A turn's gain is what the checker saw it add, delta_t = progress_{t+1} - progress_t; but the turn that
made the gain often only finished an artifact that earlier turns wrote (``deps``: the earlier steps whose
output it read), and those earlier turns passed no check themselves. So each gain is split: the turn keeps
1 - share of it, and share of it goes in equal parts to the turns its artifact depends on (transitively);
a turn that read nothing keeps all of its gain. The process value v joins the outcome advantage, centred
over the group's steps so it redistributes credit rather than adding a constant::

    v_t     = (1 - share) delta_t + sum_{s : t in D(s)} share delta_s / |D(s)|      (D(s): s's dependencies)
    A_{g,t} = A_g + beta (v_t - mean over the group's steps of v)
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import EPS, Credit, group_advantage
from market.strict import STRICT

NEEDS = frozenset({"outcome", "progress", "deps"})


@dataclass(config=STRICT)
class Config:
    share: float = Field(0.5, ge=0, le=1)
    """The part of a turn's gain handed to the turns its artifact depends on."""
    beta: float = Field(1.0, ge=0)
    """The weight of the process value beside the outcome advantage."""
    eps: float = Field(EPS, gt=0)
    """Added to the group's std (a group of equal outcomes gets 0, not a division by zero)."""


def closure(deps, t: int) -> list[int]:
    """The earlier steps ``t`` depends on, transitively (``t`` itself excluded), in ascending order."""
    seen, todo = set(), list(deps[t])
    while todo:
        s = todo.pop()
        if 0 <= s < t and s not in seen:
            seen.add(s)
            todo.extend(deps[s])
    return sorted(seen)


def value(t, share: float) -> np.ndarray:
    """[T] v_t of one trajectory: each turn's checker gain, part of it passed back along its dependencies."""
    gain = np.diff(np.asarray(t.progress, dtype=np.float64)[: len(t) + 1])
    v = np.zeros(len(t))
    for s, delta in enumerate(gain):
        back = closure(t.deps, s)
        v[s] += delta * (1 - share if back else 1)
        if back:
            v[back] += share * delta / len(back)
    return v


def estimate(group, cfg: Config) -> Credit:
    values = [value(t, cfg.share) for t in group]
    every = np.concatenate(values) if values else np.zeros(0)
    centre = every.mean() if every.size else 0.0
    return Credit([a + cfg.beta * (v - centre) for v, a in zip(values, group_advantage(group, cfg.eps))])
