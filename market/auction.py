"""The auction: who wins the right to act, and at what price.

One call clears B independent auctions at once: ``bids`` and ``eligible`` are
[B, N] arrays (N = rows of the population), and the result is a winner row and
a price per world (winner -1 where nobody was eligible). Rules:

* ``first_price`` (default; Hayek, EoM): the highest eligible bid wins and pays
  its own bid. Ties are broken uniformly at random.
* ``second_price`` (Vickrey): the highest bid wins and pays the second-highest
  eligible bid (zero when it bid alone).
* ``softmax``: the winner is drawn with P(a) = softmax(bid / temperature) over
  the eligible agents and pays its own bid. Differentiable in expectation, the
  clearing rule for learned bids.
* ``random`` (ablation): the winner is drawn uniformly among the eligible and
  pays its own bid, so bids carry no information.

Every random draw comes from the ``rng`` passed in (the model's), and each rule
draws one [B, N] array per call whatever the bids, so runs are reproducible.
"""

from __future__ import annotations

import numpy as np

CLEARING_RULES = ("first_price", "second_price", "softmax", "random")


def clear(bids: np.ndarray, eligible: np.ndarray, rule: str, rng: np.random.Generator, temperature: float = 1.0):
    """Clear B auctions. Returns ``(winner_row[B], price[B])``; winner -1 means no bidder."""
    bids = np.asarray(bids, dtype=np.int64)
    noise = rng.random(eligible.shape)  # tie-breaks / sampling: one draw per (world, row)
    if rule in ("first_price", "second_price"):
        masked = np.where(eligible, bids, -1)  # bids are >= 0: -1 marks the ineligible
        top = masked == masked.max(axis=1, keepdims=True)  # exact integer max
        key = np.where(top, noise, -1.0)  # the noise only breaks ties
    elif rule == "softmax":
        gumbel = -np.log(-np.log(np.clip(noise, 1e-300, 1.0 - 1e-16)))
        key = np.where(eligible, bids / temperature + gumbel, -np.inf)  # Gumbel-max trick == softmax sample
    elif rule == "random":
        key = np.where(eligible, noise, -np.inf)
    else:
        raise ValueError(f"unknown clearing rule {rule!r}; expected one of {CLEARING_RULES}")

    winner = key.argmax(axis=1)
    worlds = np.arange(eligible.shape[0])
    has_bidder = eligible[worlds, winner]
    price = np.broadcast_to(bids, eligible.shape)[worlds, winner].copy()
    if rule == "second_price":
        others = np.where(eligible, np.broadcast_to(bids, eligible.shape), -1)
        others[worlds, winner] = -1
        price = np.maximum(others.max(axis=1), 0)
    winner = np.where(has_bidder, winner, -1)
    price = np.where(has_bidder, price, 0)
    return winner, price
