"""The market step's bookkeeping, compiled for large markets (numba): the sale and the step's records and
payments in one pass each, where the reference's numpy lines (market/book.py ``NumpyBook``) make some
twenty calls on [B] columns, where a large market's cost is numpy's per-call overhead.

The same results as those lines, by construction and by test (markets run both ways to the same ledger hash
and trace). A reward that is not finite or beyond int64 changes nothing here, and the numpy lines raise.
"""

from __future__ import annotations

import numba
import numpy as np

FINISHED, ACTIVE = 1, 2  # book's flags


@numba.njit(cache=True, nogil=True)
def sale(owner, winner, won, bucket_brigade, conserve, house, payer, payee, pays) -> None:
    """:func:`market.brigade.sale`, world by world, into ``payer``, ``payee``, ``pays``: the one place the
    payment rule is restated (tests/market/test_brigade.py holds the two equal)."""
    for b in range(winner.size):
        seller = owner[b] if bucket_brigade else -1
        payee[b] = seller if seller >= 0 else house
        payer[b] = winner[b] if conserve else house  # not conserved: the house mints it
        pays[b] = won[b] and payee[b] != winner[b] and payer[b] != payee[b]


@numba.njit(cache=True, nogil=True)
def buy(winner, actions, owner, bucket_brigade, conserve, house, won, acted, payer, payee, pays) -> None:
    """The act's outcome, then :func:`sale`: ``won`` (a winner with a valid action), ``acted`` (the winner, -1
    where it did not win), and who pays the price to whom (``payer``, ``payee``, ``pays``)."""
    for b in range(winner.size):
        won[b] = winner[b] >= 0 and actions[b] >= 0
        acted[b] = winner[b] if won[b] else -1
    sale(owner, acted, won, bucket_brigade, conserve, house, payer, payee, pays)


@numba.njit(cache=True, nogil=True)
def book(reward, scale, done, active, won, winner, owner, price, payer, payee, pays, fee, house, horizon,
         steps, earned, path_t, reward_t, done_t, micro, src, dst, amount) -> int:
    """The step's records (owner, path, steps, done, rewards in micro-credits, earned, the worlds still
    ``active``) and its payments as the ledger's three [B] blocks (prices, fees, step rewards). Returns
    FINISHED (set where a world finished with a reward and an owner: terminal shares to pay) | ACTIVE (set
    while a world is active); -1, having changed no record, where a reward is not finite or beyond int64."""
    B = winner.size
    for b in range(B):  # the check, before anything changes
        m = np.rint((reward[b] if active[b] else 0.0) * scale)
        if not abs(m) < 2.0**63:  # False for NaN too
            return -1
        micro[b] = np.int64(m)
    flags = 0
    for b in range(B):
        if won[b]:
            owner[b] = winner[b]
        path_t[b] = winner[b]
        steps[b] += active[b]
        d = done[b] and active[b]
        done[b] = done_t[b] = d
        reward_t[b] = reward[b] if active[b] else 0.0
        earned[b] += micro[b]
        src[b], dst[b], amount[b] = payer[b], payee[b], price[b] * pays[b]
        src[B + b], dst[B + b], amount[B + b] = winner[b], house, fee * won[b]
        src[2 * B + b], dst[2 * B + b], amount[2 * B + b] = house, winner[b], micro[b] * (won[b] and not d)
        if d and micro[b] > 0 and owner[b] >= 0:
            flags |= FINISHED
        active[b] = active[b] and not d and steps[b] < horizon
        if active[b]:
            flags |= ACTIVE
    return flags
