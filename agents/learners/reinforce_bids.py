"""REINFORCE bids (``market.bid_scheme = "learned"``, ``agents.bid_objective = "reinforce"``): bids trained through
the softmax auction.

Under softmax clearing the winner of auction s is drawn with P_s(i) = softmax_{i eligible}(bid_i / temperature),
bid_i = min(head bid, wealth cap), head bid = reinforce.scale x softplus(phi . row[i] + bias[i]) (agents/learners/bid_head.py).
REINFORCE (:func:`bid_objective`)::

    L_bid = - mean_s A_s log P_s(winner_s) - entropy x mean_s H(P_s)

with A_s either ``global``: the episode's outcome (its summed world reward) minus the mean over its group of G
rollouts of the same task (:func:`agents.credit.advantages.outcome_advantage`); or ``local``: the winner's
bucket-brigade profit from that step, the market's own credit signal (:func:`agents.credit.advantages.holding_profit`),
in units of reinforce.scale. An agent whose bid sits at its wealth cap gets no gradient there: the cap, not the head,
set its bid. REINFORCE is on-policy: its loss joins the first of the round's ``agents.epochs`` steps only.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F

from agents.credit.advantages import holding_profit, outcome_advantage
from agents.learners.market_bids import MarketBids
from market.money import MICRO


class ReinforceBids(MarketBids):
    reads_auctions = True  # the loss replays every auction of the round

    @property
    def params(self) -> list:
        return list(self.head.parameters())

    @property
    def rows(self) -> list:
        return [self.head.row, self.head.bias]

    def bids(self, obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            phi = torch.as_tensor(self.features(obs), device=self.device)  # float32, no autocast: same auctions on CPU and GPU
            return self.head.bids(phi).double().cpu().numpy()

    def revise(self, rows, parents, made, found, rng) -> None:
        """Every revised row inherits its parent's head row."""
        self.head.inherit(rows[made], parents[made], rng)

    def batch(self, model):
        """Auctions of the round with a winner and a choice (>= 2 eligible) -> tensors for :func:`bid_objective`."""
        trace, market = model.trace, model.cfg
        choice = (trace.winner >= 0) & (trace.eligible.sum(-1) >= 2)
        t, b = np.nonzero(choice)
        if t.size == 0:
            return None
        N = self.head.capacity
        eligible = np.zeros((t.size, N), dtype=bool)
        eligible[:, : trace.eligible.shape[2]] = trace.eligible[t, b]  # the population may have grown since
        cap = np.full((t.size, N), np.inf)
        cap[:, : trace.wealth.shape[1]] = np.maximum(trace.wealth[t], 0) * market.bid_cap / MICRO
        if self.cfg.reinforce.advantage == "global":
            advantage = outcome_advantage(trace.reward.sum(axis=0), self.cfg.group_size(trace.path.shape[1]), normalize=False)[b]
        else:
            advantage = holding_profit(trace)[t, b] / MICRO / self.cfg.reinforce.scale  # in typical bids
        d = self.device
        return (torch.as_tensor(self.features(trace.obs[t, b]), device=d), torch.as_tensor(eligible, device=d),
                torch.as_tensor(trace.winner[t, b], device=d), torch.as_tensor(cap, dtype=torch.float32, device=d),
                torch.as_tensor(advantage, dtype=torch.float32, device=d), market.temperature)

    def loss(self, batch, epoch: int):
        if epoch:  # on-policy: the first step only
            return None
        phi, eligible, winner, cap, advantage, temperature = batch
        bids = torch.minimum(self.head.bids(phi), cap)
        return bid_objective(bids, eligible, winner, advantage, temperature, self.cfg.reinforce.entropy)


def bid_objective(bids: torch.Tensor, eligible: torch.Tensor, winner: torch.Tensor, advantage: torch.Tensor,
                  temperature: float, entropy: float) -> tuple[torch.Tensor, dict]:
    """REINFORCE on the softmax clearing: bids [M, N] credits (capped), eligible [M, N], winner [M], A [M]."""
    bids = bids.to(torch.promote_types(bids.dtype, torch.float32))  # bf16 from autocast -> float32; float64 stays
    logits = (bids / temperature).masked_fill(~eligible, float("-inf"))
    logp = F.log_softmax(logits, dim=-1)
    chosen = logp.gather(1, winner[:, None])[:, 0]
    H = -(logp.exp() * logp.masked_fill(~eligible, 0.0)).sum(-1)
    loss = -(advantage * chosen).mean() - entropy * H.mean()
    return loss, {"bid_loss": float(loss.detach()), "clearing_entropy": float(H.detach().mean())}
