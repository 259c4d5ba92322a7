"""The bid learner of a run whose bids are the market's scheme's: a bid head that learns nothing.

Value bids (agents/learners/value_bids.py) and REINFORCE bids (agents/learners/reinforce_bids.py) extend it: all three keep
one :class:`~agents.learners.bid_head.BidHead` whose rows follow the population's (a random newcomer's drawn, a child's
inherited, agents/learners/bid_head.py). Here the head has no features and is never read: it is kept because its
births draw from the run's random stream (a newcomer's guessed value, a child's noise) exactly as a run with
learned action logits and the market's bids always has, so such a run keeps its ledger from one seed.
"""

from __future__ import annotations

import numpy as np
import torch

from agents.learners.bid_head import BidHead
from agents.config import AgentsConfig
from agents.learners.base import RoundLearner, to_cpu


class MarketBids(RoundLearner):
    reads_auctions = False  # the market's scheme bids; nothing is trained from its auctions

    def __init__(self, cfg: AgentsConfig, features, device: torch.device):
        self.cfg, self.features, self.device = cfg, features, device
        self.head = BidHead(features.size, cfg).to(device)

    def eligible(self, obs: np.ndarray, awake: np.ndarray) -> np.ndarray:
        """Who may bid of the ``awake`` agents (the inner policy's wake-up): all of them."""
        return awake

    def resize(self, capacity: int) -> bool:
        grew = self.head.resize(capacity)
        if grew:
            self.changed()
        return grew

    def spawn(self, rows: np.ndarray, rng: np.random.Generator) -> None:
        self.head.spawn(rows, rng)

    def inherit(self, rows: np.ndarray, parents: np.ndarray, rng: np.random.Generator) -> None:
        self.head.inherit(rows, parents, rng)

    def revise(self, rows: np.ndarray, parents: np.ndarray, made: np.ndarray, found: np.ndarray,
               rng: np.random.Generator) -> None:
        """The head rows of rules the inner policy revised (``made``) at the states ``found``: inherited."""
        self.head.inherit(rows[made], parents[made], rng)

    def born(self, rows: np.ndarray, parents: np.ndarray | None) -> None:
        self.changed()

    def changed(self) -> None:
        """The head's weights moved (a step, a birth, a checkpoint): whatever was computed from them is stale."""

    def state_dict(self) -> dict:
        return {"head": to_cpu(self.head.state_dict())}

    def load_state_dict(self, state: dict) -> None:
        with torch.no_grad():  # shapes follow the checkpoint (the population may have grown)
            for name, value in state["head"].items():
                self.head.get_parameter(name).data = value.to(self.device).clone()
        self.changed()
