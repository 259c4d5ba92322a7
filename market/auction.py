"""The auction: who wins the right to act, and at what price.

One call clears B independent auctions at once: ``bids`` ([N] or [B, N]) and
``eligible`` ([B, N], N = rows of the population), and the result is a winner
row and a price per world (winner -1 where nobody was eligible). Rules:

* ``first_price`` (default; Hayek, EoM): the highest eligible bid wins and pays
  its own bid. Ties are broken uniformly at random.
* ``second_price`` (Vickrey): the highest bid wins and pays the second-highest
  eligible bid (zero when it bid alone).
* ``softmax``: the winner is drawn with P(a) = softmax(bid / temperature) over
  the eligible agents and pays its own bid. The clearing rule for learned bids.
* ``random`` (ablation): the winner is drawn uniformly among the eligible and
  pays its own bid, so bids carry no information.

Randomness: the *candidates* of each world (the top bidders for the price
rules, every eligible agent for ``softmax`` and ``random``) each get one
uniform draw from ``rng``, in (world, row) order; the candidate with the
largest key wins (the draw itself, or bid/temperature + Gumbel(draw) for
softmax: the Gumbel-max trick samples the softmax exactly). Drawing only for
candidates keeps the common case (few ties) cheap, and the order makes runs
reproducible.
"""

from __future__ import annotations

import numpy as np

from market.kernels import kernel
from market.money import share, to_micro_array, to_ppm

CLEARING_RULES = ("first_price", "second_price", "softmax", "random")
COMPILED_CELLS = 1 << 10
"""Auctions of this many (world, row) cells or more clear on the compiled path (market/auction_kernel.py, numba:
imported on first use, so a small economy never loads it), except under ``softmax``; the result is the same.
Holland's bids of this many rows or more are computed there too."""


def capped(raw: np.ndarray, wealth: np.ndarray, bid_cap: float) -> np.ndarray:
    """Bids ``raw`` capped at ``bid_cap`` x wealth (and at 0 for a debtor): nobody bids money it does not hold."""
    cap = np.maximum(wealth, 0)
    if bid_cap != 1.0:
        cap = share(cap, bid_cap)
    return np.minimum(raw, cap)


def capped_credits(credits, wealth: np.ndarray, bid_cap: float) -> np.ndarray:
    """A policy's bids in float credits ([N] or [B, N]) -> :func:`capped` micro-credits
    (market.money.to_micro_array). From ``COMPILED_CELLS`` cells on, in one compiled pass instead of the numpy
    path's eight, which a learned market would pay at every auction step. The same integers and
    the same errors (a bid not finite or beyond int64 is left to the numpy path, which raises)."""
    credits = np.asarray(credits, dtype=np.float64)
    if credits.size >= COMPILED_CELLS:
        out = np.empty(credits.shape, dtype=np.int64)
        if kernel("market.auction_kernel").capped_micro(credits.reshape(-1, wealth.size), wealth,
                                                        to_ppm(bid_cap), out.reshape(-1, wealth.size)):
            return out
    return capped(to_micro_array(credits), wealth, bid_cap)


def holland_bids(wealth: np.ndarray, c: float, base: int, bid_cap: float, rows: np.ndarray | None = None,
                 out: np.ndarray | None = None) -> np.ndarray:
    """Holland's bids ``max(base, c x wealth)`` in micro-credits, :func:`capped`. Seven passes over the
    population on numpy, one on the compiled path (large markets); the same integers either way. The kernel
    relies on both fractions being at most 1 (no product leaves int64), as the config allows; any other
    fraction takes the numpy path, exact for every fraction.

    With ``rows`` (and ``out``, the bids before), only those rows of ``out`` are rewritten: a bid that reads
    nothing but its bidder's balance changes only where a payment moved one."""
    on_numpy = wealth.size < COMPILED_CELLS or not (0 <= c <= 1 and 0 <= bid_cap <= 1)
    if rows is not None:
        if on_numpy:
            out[rows] = holland_bids(wealth[rows], c, base, bid_cap)
        else:
            kernel("market.auction_kernel").holland_rows(wealth, rows, to_ppm(c), base, to_ppm(bid_cap), out)
        return out
    if on_numpy:
        return capped(np.maximum(share(wealth, c), base), wealth, bid_cap)
    out = np.empty_like(wealth)
    kernel("market.auction_kernel").holland(wealth, to_ppm(c), base, to_ppm(bid_cap), out)
    return out


def clear(bids: np.ndarray, eligible: np.ndarray, rule: str, rng: np.random.Generator, temperature: float = 1.0):
    """Clear B auctions. Returns ``(winner_row[B], price[B])``; winner -1 means no bidder."""
    if rule not in CLEARING_RULES:
        raise ValueError(f"unknown clearing rule {rule!r}; expected one of {CLEARING_RULES}")
    B = eligible.shape[0]
    bids = np.asarray(bids, dtype=np.int64)
    if eligible.size >= COMPILED_CELLS and rule != "softmax":
        return _clear_compiled(bids, eligible, rule, rng)
    masked = np.where(eligible, bids, -1)  # bids are >= 0: -1 marks the ineligible
    if rule in ("first_price", "second_price"):
        top = masked.max(axis=1, keepdims=True)
        candidates = (masked == top) & (top >= 0)  # exact integer max among the eligible
    else:
        candidates = eligible

    world, row = np.nonzero(candidates)  # row-major: worlds ascending, rows ascending within a world
    draw = rng.random(world.size)
    winner = np.full(B, -1, dtype=np.int64)
    price = np.zeros(B, dtype=np.int64)
    if world.size == 0:
        return winner, price
    bid = bids[row] if bids.ndim == 1 else np.broadcast_to(bids, eligible.shape)[world, row]  # each candidate's
    if rule == "softmax":
        key = bid / temperature - np.log(-np.log(np.clip(draw, 1e-300, 1.0 - 1e-16)))
    else:
        key = draw

    first = np.ones(world.size, dtype=bool)
    np.not_equal(world[1:], world[:-1], out=first[1:])
    starts = np.flatnonzero(first)  # each world's first candidate
    best = starts if starts.size == world.size else _segment_argmax(key, starts)  # a lone candidate wins
    worlds = world[starts]
    winner[worlds] = row[best]
    price[worlds] = bid[best]
    if rule == "second_price":
        masked[worlds, row[best]] = -1
        price[worlds] = np.maximum(masked[worlds].max(axis=1), 0)
    return winner, price


def _clear_compiled(bids: np.ndarray, eligible: np.ndarray, rule: str, rng: np.random.Generator):
    """:func:`clear` in two compiled passes, the candidates' draws taken from ``rng`` in between."""
    compiled = kernel("market.auction_kernel")
    B = eligible.shape[0]
    bids, by_bid = bids.reshape(-1, eligible.shape[1]), rule != "random"  # [N] bids: one row every world reads
    top, count = np.empty(B, dtype=np.int64), np.empty(B, dtype=np.int64)
    draw = rng.random(compiled.candidates(bids, eligible, by_bid, top, count))
    winner, price = np.full(B, -1, dtype=np.int64), np.zeros(B, dtype=np.int64)
    compiled.pick(bids, eligible, by_bid, rule == "second_price", top, count, draw, winner, price)
    return winner, price


def _segment_argmax(key: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Index of the first maximum of ``key`` within each segment [starts[i], starts[i+1])."""
    ends = np.empty_like(starts)  # (np.diff of np.append was two thirds of a small market's clearing)
    ends[:-1], ends[-1] = starts[1:], key.size
    seg_max = np.maximum.reduceat(key, starts)
    position = np.where(key == np.repeat(seg_max, ends - starts), np.arange(key.size), key.size)
    return np.minimum.reduceat(position, starts)
