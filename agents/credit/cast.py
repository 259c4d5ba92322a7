r"""``cast``: credit from a solver's state value (CAST): a step earns the change it makes in it.

    A_{g,t} = V(s_{g,t+1}) - V(s_{g,t})

V is an exact solver's value of the state (Blocks World: minus the moves a solver needs to
finish; relay: minus the stages left). No outcome term: the solver already knows what success is.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import Credit
from market.strict import STRICT

NEEDS = frozenset({"solver"})


@dataclass(config=STRICT)
class Config:
    scale: float = Field(1.0, gt=0)
    """Solver-value units -> advantage units."""


def estimate(group, cfg: Config) -> Credit:
    return Credit([cfg.scale * np.diff(np.asarray(t.solver, dtype=np.float64)) for t in group])
