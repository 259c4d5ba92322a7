r"""``skillgate``: separate credit channels for selection and execution (SkillGate).

selection_t = 1 / 0 marks a selection step (which skill or agent) that did / did not pick the
oracle one; -1 an execution step. Over the group's selection steps::

    A_{g,t} = selection_t - mean_{selection steps of the group} selection      selection step (no std)
    A_{g,t} = A_g                                                           execution step (grpo)
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.base import EPS, Credit, flat, group_advantage, split
from market.strict import STRICT

NEEDS = frozenset({"outcome", "selection"})


@dataclass(config=STRICT)
class Config:
    eps: float = Field(EPS, gt=0)
    """Added to the group's std (a group of equal outcomes gets 0, not a division by zero)."""


def estimate(group, cfg: Config) -> Credit:
    A = group_advantage(group, cfg.eps)
    sel, owner = flat(group, "selection")
    sel = sel.ravel()
    is_sel = sel >= 0
    centre = sel[is_sel].mean() if is_sel.any() else 0.0
    return Credit(split(group, np.where(is_sel, sel - centre, A[owner] if owner.size else 0.0)))
