"""The ledger's compiled path for large transfers: checks, balances and log rows in one pass each (numba).

:meth:`market.ledger.Ledger.transfer` on numpy makes about a dozen passes over a transfer's columns (the
checks, ``np.subtract.at`` / ``np.add.at``, the account ids) and :meth:`~market.ledger.Ledger.pending` six
strided ones over the packed log rows. For a few rows that is numpy's per-call cost and nothing else, but
a large Boltzmann economy moves thousands of units a step, where those passes dominate. :func:`move`
does the same work in three loops, writing the log rows as it goes.

It decides nothing on its own: when any check fails, or the balances could come near int64, it moves
nothing and returns False, and the ledger takes its numpy path, which raises the same error as always (a
test runs random operations through both paths and compares balances, logs and errors).
"""

from __future__ import annotations

import numba


@numba.njit(cache=True, nogil=True)
def move(wealth, alive, ids, src, dst, amount, reason, episode, step, safe, rows) -> int:
    """Move ``amount[i]`` from row ``src[i]`` to row ``dst[i]`` and write its log row into ``rows`` (the log's
    dtype), skipping zero amounts (they move nothing); returns how many rows it wrote.

    ``amount``, ``reason`` and ``episode`` hold one value for every transfer or one each; ``safe`` is the
    bound below which n amounts plus the largest |balance| cannot overflow (the ledger's ``_SAFE``).
    Returns -1, having changed nothing, where the numpy path must decide (an error, or near overflow).
    """
    n, rows_in_population = src.size, wealth.size
    largest = richest = 0  # only the touched balances change: theirs bound the result (not a scan of every row)
    for i in range(n):  # 1. every check, before anything moves
        s, d, a = src[i], dst[i], amount[i if amount.size > 1 else 0]
        if a == 0:  # moves nothing: its rows are not read (the market's idle worlds name row -1), as on numpy
            continue
        if a < 0 or s < 0 or d < 0 or s >= rows_in_population or d >= rows_in_population:
            return -1
        if not (alive[s] and alive[d]):
            return -1
        largest = max(largest, a)
        richest = max(richest, abs(wealth[s]), abs(wealth[d]))
    if float(largest) * n + float(richest) >= safe:
        return -1
    written = 0
    for i in range(n):  # 2. the balances and the log, in order
        s, d, a = src[i], dst[i], amount[i if amount.size > 1 else 0]
        if a == 0:
            continue
        wealth[s] -= a
        wealth[d] += a
        row = rows[written]
        row.src, row.dst, row.amount, row.step = ids[s], ids[d], a, step
        row.reason, row.episode = reason[i if reason.size > 1 else 0], episode[i if episode.size > 1 else 0]
        written += 1
    return written
