r"""``bucket_brigade``: the market's own credit, each winner's step profit (Holland 1985; Baum 1999).

    A_{g,t} = received_{g,t} - paid_{g,t} + reward_{g,t}

received: what the next winner paid this step's winner for the item; paid: the price (and fee)
this winner paid; reward: what the house paid it at this step (step or terminal reward). All
read off the ledger (:func:`agents.credit.market.trajectories`), in credits, not normalised.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import Credit
from market.strict import STRICT

NEEDS = frozenset({"profit"})


@dataclass(config=STRICT)
class Config:
    scale: float = Field(1.0, gt=0)
    """Credits -> advantage units."""


def estimate(group, cfg: Config) -> Credit:
    return Credit([cfg.scale * np.asarray(t.profit, dtype=np.float64) for t in group])
