"""The auction's compiled path for large markets: two passes over [B, N] instead of a dozen numpy ones (numba),
and Holland's bids in one pass over [N] instead of seven.

:func:`market.auction.clear` on numpy masks the bids, takes a max, compares, lists the candidates with
``nonzero`` and reduces per world: each a full pass over the B x N cells, and in an economy where many
agents hold the same wealth (Holland's bids tie by the thousand) the candidate lists are long. At N = 10k
that was a fifth of an auction step. Here one pass finds each world's top bid and how many rows bid it,
the caller draws the candidates' uniforms from its own generator (so the stream is numpy's, in the same
(world, row) order), and one more pass picks each world's winner and price.

Only the rules whose keys are the draws themselves run here (``first_price``, ``second_price``,
``random``): ``softmax`` adds a Gumbel transform of each draw, and numba's ``log`` need not round as
numpy's does, so it stays on numpy, where a run's winners are bit for bit the reference's.
"""

from __future__ import annotations

import numba

from market.money import MAX_MICRO, MICRO

_UNSPLIT = MAX_MICRO // MICRO  # |amount| up to this times a ppm <= MICRO stays inside int64


@numba.njit(cache=True, nogil=True)
def candidates(bids, eligible, by_bid, top, count) -> int:
    """Per world ``b``: ``top[b]`` the highest eligible bid (-1: nobody eligible) and ``count[b]`` its
    candidates, the rows that bid it (``by_bid``) or else every eligible row. Returns the candidates in all.
    ``bids`` is [B, N], or [1, N] when every world sees the same bids."""
    total = 0
    for b in range(eligible.shape[0]):
        bid = bids[b if bids.shape[0] > 1 else 0]
        best, n_best, n_eligible = -1, 0, 0
        for n in range(eligible.shape[1]):
            if eligible[b, n]:
                x = bid[n]
                if x > best:
                    best, n_best = x, 1
                elif x == best:
                    n_best += 1
                n_eligible += 1
        top[b], count[b] = best, n_best if by_bid else n_eligible
        total += count[b]
    return total


@numba.njit(cache=True, nogil=True)
def pick(bids, eligible, by_bid, second, top, draw, winner, price) -> None:
    """Each world's winner: the candidate with the largest draw (the first one on a tie), candidates taking
    ``draw`` in (world, row) order; it pays its bid, or under ``second`` the next-highest eligible bid."""
    k = 0
    for b in range(eligible.shape[0]):
        bid = bids[b if bids.shape[0] > 1 else 0]
        best, best_key = -1, -1.0
        for n in range(eligible.shape[1]):
            if eligible[b, n] and (not by_bid or bid[n] == top[b]):
                if draw[k] > best_key:
                    best, best_key = n, draw[k]
                k += 1
        if best < 0:
            continue
        winner[b], price[b] = best, bid[best]
        if second:
            runner_up = 0
            for n in range(eligible.shape[1]):
                if eligible[b, n] and n != best:
                    runner_up = max(runner_up, bid[n])
            price[b] = runner_up


@numba.njit(cache=True, nogil=True, inline="always")
def _share(x, ppm):
    """:func:`market.money.share` of one amount (``ppm`` <= MICRO): one multiply and one floor division where
    the product stays inside int64, else the split at the credit (``//`` and ``%`` floor as Python's do)."""
    if -_UNSPLIT <= x <= _UNSPLIT:
        return x * ppm // MICRO
    return x // MICRO * ppm + x % MICRO * ppm // MICRO


@numba.njit(cache=True, nogil=True)
def holland(wealth, c_ppm, base, cap_ppm, out) -> None:
    """``out[i] = min(max(base, c x wealth[i]), cap x max(wealth[i], 0))``, exactly as the numpy path."""
    for i in range(wealth.size):
        w = wealth[i]
        cap = max(w, 0)
        if cap_ppm != MICRO:
            cap = _share(cap, cap_ppm)
        out[i] = min(max(_share(w, c_ppm), base), cap)
