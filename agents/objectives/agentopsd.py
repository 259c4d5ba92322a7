r"""``agentopsd``: the turns that move a privileged teacher's belief get more of the advantage.

The teacher is the policy itself with the correct output at the step's state in its prompt (a privileged
pass, agents/objectives/privileged.py). Each turn's evidence is its summed per-token gap
g_m = sum_t log pi(y_t | x, correct) - log pi(y_t | x); the belief that the episode is on the right track is a
recursive, decayed Bayesian update in log-odds, b_m = gamma b_{m-1} + g_m (b_0 = 0: B = 1/2), B_m = sigmoid(b_m).
A turn moves it by about B_{m-1}(1 - B_{m-1}) |g_m| (the gate: evidence counts most where the belief is
undecided, little where it is already settled), and the group-normalised advantage is shared out by that::

    d_m = B_{m-1} (1 - B_{m-1}) |g_m|
    w_m = (1 - lambda) + lambda x d_m / mean_{k in episode} d_k        (mean 1 per episode; uniform if all d = 0)
    L   = grpo's clipped surrogate on w_m A_m
"""

from __future__ import annotations

import torch
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.objectives.batch import PolicyBatch
from agents.objectives.grpo import Config as Grpo
from agents.objectives.privileged import episodes, mean_one, reweighted, turn_gap
from market.strict import STRICT

NEEDS = ("teacher_logp",)


@dataclass(config=STRICT)
class Config:
    grpo: Grpo = Field(default_factory=Grpo)
    """The surrogate's settings."""
    lam: float = Field(0.5, ge=0, le=1)
    """lambda: the share of the advantage given out by belief movement (the rest uniformly)."""
    gamma: float = Field(0.95, ge=0, le=1)
    """The belief's decay per turn: older evidence fades."""


def movement(g: torch.Tensor, batch: PolicyBatch, gamma: float) -> tuple[torch.Tensor, torch.Tensor]:
    """([M] gated belief movement d_m, [M] belief B_m after each turn), episode by episode in time order."""
    d, belief = torch.zeros_like(g), torch.zeros_like(g)
    for rows in episodes(batch):
        b = g.new_zeros(())
        for m in rows.tolist():
            prior = torch.sigmoid(b)
            d[m] = prior * (1 - prior) * g[m].abs()
            b = gamma * b + g[m]
            belief[m] = torch.sigmoid(b)
    return d, belief


def loss(batch: PolicyBatch, cfg: Config) -> tuple:
    g = turn_gap(batch.teacher_logp, batch).to(batch.advantage.dtype)
    d, belief = movement(g, batch, cfg.gamma)
    weight = (1 - cfg.lam) + cfg.lam * mean_one(d, batch)
    value, stats = reweighted(batch, weight, cfg.grpo)
    stats.update(teacher_gap=float(g.mean()), belief=float(belief.mean()), weight_max=float(weight.max()))
    return value, stats
