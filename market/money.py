"""Units of money.

All amounts are int64 *micro-credits*: one credit is 1_000_000 micro-credits.
Configs speak credits (floats, readable); the engine converts once, at the
boundary, so no float ever touches a balance.

``MAX_CREDITS`` bounds every money-valued config key. It is 1e9 credits = 1e15
micro-credits, 1/9223 of int64's range: a balance only reaches the edge after
more than nine thousand maximal payments in one direction. The config also
refuses a run whose sure issuance (rewards, funded newborns) passes int64 / 1000
(scenarios/run/config.py), and the ledger refuses (``LedgerError``) any transfer
that would take a balance past ``MAX_MICRO`` rather than let it wrap
(market/ledger.py), so what no bound foresees (minted payments compound) fails
loudly.
"""

import math

import numpy as np

MICRO = 1_000_000
MAX_CREDITS = 1e9
"""The largest value of a money-valued config key, in credits (market.base_bid, population.initial_wealth, ...)."""
MAX_MICRO = np.iinfo(np.int64).max
"""The largest amount or balance int64 holds, in micro-credits."""


def to_micro(credits: float) -> int:
    """Credits (a config value) -> integer micro-credits, rounded to nearest; ValueError where int64 cannot hold
    it (a non-finite or huge value must fail here, not wrap later in an int64 array)."""
    micro = credits * MICRO
    if not math.isfinite(micro) or abs(micro) >= 2.0**63:  # float(MAX_MICRO) is 2^63 itself
        raise ValueError(f"{credits!r} credits: not an int64 amount of micro-credits")
    return int(round(micro))


def to_micro_array(credits) -> np.ndarray:
    """Float credits (a policy's bids) -> int64 micro-credits, rounded to nearest (see :func:`rint_micro`)."""
    return rint_micro(np.asarray(credits, dtype=np.float64) * MICRO)


def rint_micro(micro) -> np.ndarray:
    """Float micro-credits (a world's reward x scale) -> int64, rounded to nearest; ValueError where one is not
    finite or beyond int64 (numpy's cast would give INT64_MIN silently, a reward that is never paid)."""
    micro = np.rint(micro)
    if not np.maximum.reduce(np.abs(micro), axis=None, initial=0.0) < 2.0**63:  # False for NaN too
        outside = ~(np.abs(micro) < 2.0**63)
        raise ValueError(f"{micro[outside].flat[0] / MICRO!r} credits: not an int64 amount of micro-credits")
    return micro.astype(np.int64)


def share(micro, fraction: float):
    """``fraction`` of integer micro-credit amount(s), in whole micro-credits (the fraction is rounded
    to parts per million first, so the result is exact integer arithmetic on every machine). Split at the
    credit (``micro = q MICRO + r``) so no product leaves int64: ``micro x ppm`` would from 9.2e7 credits on."""
    ppm = to_ppm(fraction)
    if isinstance(micro, np.ndarray) and micro.size:  # one multiply and one division where no product leaves int64
        limit = MAX_MICRO // max(abs(ppm), 1)  # (a quarter of divmod's time: Holland's bids at every auction step)
        if -limit <= micro.min() and micro.max() <= limit:
            return micro * ppm // MICRO
    q, r = divmod(micro, MICRO)
    return q * ppm + r * ppm // MICRO


def to_ppm(fraction: float) -> int:
    """A fraction in whole parts per million: the rounding :func:`share` applies before its integer arithmetic."""
    return round(fraction * MICRO)


def to_credits(micro) -> float | np.ndarray:
    """Micro-credits -> credits, for reports and plots only."""
    return np.asarray(micro, dtype=np.float64) / MICRO if np.ndim(micro) else micro / MICRO
