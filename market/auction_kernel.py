"""The auction's compiled path for large markets: two passes over [B, N] instead of a dozen numpy ones (numba),
Holland's bids in one pass over [N] instead of seven, and a policy's bids in credits brought to capped
micro-credits in one pass instead of eight.

:func:`market.auction.clear` on numpy masks the bids, takes a max, compares, lists the candidates with
``nonzero`` and reduces per world: each a full pass over the B x N cells, and in an economy where many agents
hold the same wealth (Holland's bids tie by the thousand) the candidate lists are long. Here two passes find
each world's top bid and how many rows bid it, the caller draws the candidates' uniforms from its own
generator (so the stream is numpy's, in the same (world, row) order), and :func:`pick` finds each world's
winner and price. No loop branches on eligibility, which the branch predictor cannot learn (a rule's outcome
is as good as random): branches there would cost more than the passes themselves.

Only the rules whose keys are the draws themselves run here (``first_price``, ``second_price``,
``random``): ``softmax`` adds a Gumbel transform of each draw, and numba's ``log`` need not round as
numpy's does, so it stays on numpy, where a run's winners are bit for bit the reference's.
"""

from __future__ import annotations

import numba
import numpy as np

from market.money import MAX_MICRO, MICRO

_UNSPLIT = MAX_MICRO // MICRO  # |amount| up to this times a ppm <= MICRO stays inside int64


@numba.njit(cache=True, nogil=True)
def candidates(bids, eligible, by_bid, top, count) -> int:
    """Per world ``b``: ``top[b]`` the highest eligible bid (-1: nobody eligible) and ``count[b]`` its
    candidates, the rows that bid it (``by_bid``) or else every eligible row. Returns the candidates in all.
    ``bids`` is [B, N], or [1, N] when every world sees the same bids.

    Two passes without a branch on the data (a max of selects, then a count): eligibility is as good as random
    to the branch predictor, so a one-pass loop that branched on it would cost more than the two."""
    total = 0
    for b in range(eligible.shape[0]):
        bid, row = bids[b if bids.shape[0] > 1 else 0], eligible[b]
        best = -1
        for n in range(row.size):
            x = bid[n]  # loaded before the select, so the select stays a select (LLVM will not speculate a load)
            best = max(best, x if row[n] else -1)
        n_best, n_eligible = 0, 0
        for n in range(row.size):
            x = bid[n]
            n_best += (x if row[n] else -1) == best
            n_eligible += row[n]
        top[b], count[b] = best, (n_best if best >= 0 else 0) if by_bid else n_eligible
        total += count[b]
    return total


CHUNK = 64
"""Rows counted at a time while :func:`pick` looks for its winner's row."""


@numba.njit(cache=True, nogil=True)
def _candidates_in(row, bid, by_bid, top) -> int:
    """How many of these rows are candidates (a count without a branch, vectorized)."""
    n_cand = 0
    if by_bid:
        for n in range(row.size):
            x = bid[n]
            n_cand += row[n] & (x == top)
    else:
        for n in range(row.size):
            n_cand += row[n]
    return n_cand


@numba.njit(cache=True, nogil=True)
def pick(bids, eligible, by_bid, second, top, count, draw, winner, price) -> None:
    """Each world's winner: the candidate with the largest draw (the first one on a tie), candidates taking
    ``draw`` in (world, row) order; it pays its bid, or under ``second`` the next-highest eligible bid.

    The winner is found among the world's ``count`` draws first, then its row: chunks of rows are counted until
    the one that holds it, which is walked. Draws are in [0, 1), whose bits order as int64s do, so their max is
    an integer max (vectorized, where a float max's NaN rules keep it scalar)."""
    keys = draw.view(np.int64)
    k = 0
    for b in range(eligible.shape[0]):
        n_cand = count[b]
        if n_cand == 0:
            continue
        bid, row, t = bids[b if bids.shape[0] > 1 else 0], eligible[b], top[b]
        mine = keys[k : k + n_cand]
        k += n_cand
        best_key = mine[0]
        for i in range(n_cand):
            best_key = max(best_key, mine[i])
        j = 0  # the winner is the (j + 1)-th candidate
        while mine[j] != best_key:
            j += 1
        start, seen = 0, 0
        while True:
            stop = min(start + CHUNK, row.size)
            in_chunk = _candidates_in(row[start:stop], bid[start:stop], by_bid, t)
            if seen + in_chunk > j:
                break
            start, seen = stop, seen + in_chunk
        n = start
        while True:
            seen += _candidates_in(row[n : n + 1], bid[n : n + 1], by_bid, t)
            if seen > j:
                break
            n += 1
        winner[b], price[b] = n, bid[n]
        if second:
            runner_up = 0
            for m in range(row.size):
                if row[m] and m != n:
                    runner_up = max(runner_up, bid[m])
            price[b] = runner_up


@numba.njit(cache=True, nogil=True, inline="always")
def _share(x, ppm):
    """:func:`market.money.share` of one amount (``ppm`` <= MICRO): one multiply and one floor division where
    the product stays inside int64, else the split at the credit (``//`` and ``%`` floor as Python's do)."""
    if -_UNSPLIT <= x <= _UNSPLIT:
        return x * ppm // MICRO
    return x // MICRO * ppm + x % MICRO * ppm // MICRO


@numba.njit(cache=True, nogil=True, inline="always")
def _holland(w, c_ppm, base, cap_ppm):
    """``min(max(base, c x w), cap x max(w, 0))``, exactly as the numpy path."""
    cap = max(w, 0)
    if cap_ppm != MICRO:
        cap = _share(cap, cap_ppm)
    return min(max(_share(w, c_ppm), base), cap)


@numba.njit(cache=True, nogil=True)
def holland(wealth, c_ppm, base, cap_ppm, out) -> None:
    """``out[i]``: Holland's bid of row ``i``, for every row."""
    for i in range(wealth.size):
        out[i] = _holland(wealth[i], c_ppm, base, cap_ppm)


@numba.njit(cache=True, nogil=True)
def holland_rows(wealth, rows, c_ppm, base, cap_ppm, out) -> None:
    """``out[r]``: Holland's bid of row ``r``, for the ``rows`` only (those whose balance moved)."""
    for r in rows:
        out[r] = _holland(wealth[r], c_ppm, base, cap_ppm)


@numba.njit(cache=True, nogil=True)
def capped_micro(credits, wealth, cap_ppm, out) -> bool:
    """``out[b, n]``: bid ``credits[b, n]`` in micro-credits, rounded to nearest (half to even, as ``np.rint``),
    capped at ``cap_ppm`` of row n's balance (0 for a debtor): market.auction.capped of
    market.money.to_micro_array. False where a bid is not finite or beyond int64 (``out`` then holds
    nothing useful, and the numpy path raises)."""
    for n in range(wealth.size):
        cap = max(wealth[n], 0)
        if cap_ppm != MICRO:
            cap = _share(cap, cap_ppm)
        for b in range(credits.shape[0]):
            micro = np.rint(credits[b, n] * MICRO)
            if not abs(micro) < 2.0**63:  # False for NaN too
                return False
            out[b, n] = min(np.int64(micro), cap)
    return True
