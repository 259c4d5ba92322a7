"""The auction's compiled path for large markets: two passes over [B, N] instead of a dozen numpy ones (numba).

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


@numba.njit(cache=True, nogil=True)
def candidates(bids, eligible, by_bid, top, count) -> int:
    """Per world ``b``: ``top[b]`` the highest eligible bid (-1: nobody eligible) and ``count[b]`` its
    candidates, the rows that bid it (``by_bid``) or else every eligible row. Returns the candidates in all."""
    total = 0
    for b in range(eligible.shape[0]):
        best, n_best, n_eligible = -1, 0, 0
        for n in range(eligible.shape[1]):
            if eligible[b, n]:
                x = bids[b, n]
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
        best, best_key = -1, -1.0
        for n in range(eligible.shape[1]):
            if eligible[b, n] and (not by_bid or bids[b, n] == top[b]):
                if draw[k] > best_key:
                    best, best_key = n, draw[k]
                k += 1
        if best < 0:
            continue
        winner[b], price[b] = best, bids[b, best]
        if second:
            runner_up = 0
            for n in range(eligible.shape[1]):
                if eligible[b, n] and n != best:
                    runner_up = max(runner_up, bids[b, n])
            price[b] = runner_up
