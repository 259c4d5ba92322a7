"""What a round leaves behind: its log for persistence, and its trace for the learners and births."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from market.brigade import Payments


@dataclass
class RoundLog:
    """What one round changed, for persistence (written once per round, never per transfer)."""

    transfers: np.ndarray
    episodes: list[dict]
    births: list[dict] = field(default_factory=list)
    deaths: list[dict] = field(default_factory=list)
    usage: list[dict] = field(default_factory=list)  # the round's LLM calls per engine (set by the runner: store.py)
    heldout: list[dict] = field(default_factory=list)  # the learning curve's point measured after it, if any (the runner)


@dataclass
class RoundTrace:
    """Who acted where in the last training round, and every payment it made (``payments``): explore
    births revise a rule from its failure; a policy's ``learn(model)`` reads the round from here."""

    path: np.ndarray  # [T, B] winner row per step (-1: nobody acted)
    obs: np.ndarray  # [T, B, F] the observation each winner acted on
    solved: np.ndarray  # [B]
    winner: np.ndarray  # [T, B] the auction's winner (-1: none), before an invalid action forfeits
    price: np.ndarray  # [T, B] clearing price (micro-credits; 0 where nobody won)
    reward: np.ndarray  # [T, B] the world's reward (world units; 0 where inactive)
    done: np.ndarray  # [T, B] the episode ended at this step
    payments: Payments  # the round's in-episode payments, by row, world and step (market/brigade.py)
    live: np.ndarray | None = None  # [T, B] the world was in play at the step (it had not ended; a branch had started)
    # the auctions in full, recorded only for a policy with ``reads_auctions``:
    eligible: np.ndarray | None = None  # [T, B, N] bool: who could win each auction
    wealth: np.ndarray | None = None  # [T, N] micro-credits at the step's start (bids are capped by it)
    # a round whose policy branches (Policy.branches): each world's full rollout (itself for a full one) and how
    # many of its steps the world took over (0 for a full one: a branch's own steps start once the full ones ended)
    source: np.ndarray | None = None  # [B]
    prefix: np.ndarray | None = None  # [B]

    def failures(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each row, the observation of its last action in a failed episode -> (obs [k, F], found [k])."""
        hit = (self.path[:, :, None] == rows[None, None, :]) & ~self.solved[None, :, None]  # [T, B, k]
        flat = hit.reshape(-1, rows.size)
        last = flat.shape[0] - 1 - flat[::-1].argmax(axis=0)  # latest (t, b) in row-major order
        found = flat.any(axis=0)
        obs = self.obs.reshape(flat.shape[0], -1)[np.where(found, last, 0)]
        return obs, found
