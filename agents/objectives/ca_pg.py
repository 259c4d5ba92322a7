r"""``ca_pg``: train a recall stage for what it is for: the list it hands on must contain the item.

The first stage of a two-stage recommender scores K candidates (``item_logits``) and passes a list
of L on; a reward only comes if the held-out item is in it. ``marginal`` maximises the probability
of that event, marginalised over the list. For a list of L draws without replacement from
p = softmax(scores) that probability has no closed form; we take the with-replacement value
(exact for L = 1, else a lower bound: drawing without replacement only raises the item's later chances)::

    P(item in list) ~ 1 - (1 - p_item)^L,            L_marginal = - mean_m P_m

its gradient is REINFORCE's on log p_item times L (1 - p_item)^(L-1) p_item: large while the item
is out of reach, vanishing once it is surely listed. ``top1`` is the O(L) pairwise variant: the
item must outrank the L candidates now at the top of the list (TOP1 of GRU4Rec, Hidasi et al. 2016)::

    L_top1 = mean_m mean_{j in top-L(m), j != item} sigmoid(s_j - s_item) + sigmoid(s_j^2)

Steps whose held-out item is not among the candidates (``target`` = -1) carry no signal.
"""

from __future__ import annotations

from typing import Literal

import torch
from pydantic.dataclasses import dataclass

from agents.objectives.batch import PolicyBatch
from market.strict import STRICT

NEEDS = ("item_logits", "target", "list_len")


@dataclass(config=STRICT)
class Config:
    variant: Literal["marginal", "top1"] = "marginal"
    """``marginal``: the hit probability over the whole softmax; ``top1``: pairwise against the list's L."""


def hit_probability(scores: torch.Tensor, target: torch.Tensor, L: int) -> torch.Tensor:
    """[m] 1 - (1 - p_item)^L, p = softmax(scores)."""
    p = torch.softmax(scores, -1).gather(1, target[:, None])[:, 0]
    return 1 - torch.exp(L * torch.log1p(-p.clamp(max=1 - 1e-12)))


def top1(scores: torch.Tensor, target: torch.Tensor, L: int) -> torch.Tensor:
    """[m] TOP1 of the item against the L best other candidates."""
    s_item = scores.gather(1, target[:, None])
    others = scores.scatter(1, target[:, None], float("-inf"))
    top = others.detach().topk(min(L, scores.shape[1] - 1), dim=1).indices
    s = scores.gather(1, top)
    return (torch.sigmoid(s - s_item) + torch.sigmoid(s**2)).mean(1)


def loss(batch: PolicyBatch, cfg: Config) -> tuple:
    rows = batch.target >= 0
    scores, target, n = batch.item_logits[rows], batch.target[rows], rows.sum().clamp(min=1)
    hit = hit_probability(scores, target, batch.list_len)
    value = (-hit if cfg.variant == "marginal" else top1(scores, target, batch.list_len)).sum() / n
    return value, {"policy_loss": float(value.detach()), "hit": float(hit.detach().sum() / n),
                   "rows": float(rows.sum())}
