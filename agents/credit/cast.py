r"""``cast``: credit from a solver's state value (CAST): a step earns the change it makes in it.

    A_{g,t} = V(s_{g,t+1}) - V(s_{g,t})

V is an exact solver's value of the state (Blocks World: minus the moves a solver needs to
finish; relay: minus the stages left). No outcome term: the solver already knows what success is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agents.credit.base import Credit

NEEDS = frozenset({"solver"})


@dataclass
class Config:
    scale: float = 1.0


def estimate(group, cfg: Config) -> Credit:
    return Credit([cfg.scale * np.diff(np.asarray(t.solver, dtype=np.float64)) for t in group])
