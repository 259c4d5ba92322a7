"""Units of money.

All amounts are int64 *micro-credits*: one credit is 1_000_000 micro-credits.
Configs speak credits (floats, readable); the engine converts once, at the
boundary, so no float ever touches a balance.
"""

import numpy as np

MICRO = 1_000_000


def to_micro(credits: float) -> int:
    """Credits (a config value) -> integer micro-credits, rounded to nearest."""
    return int(round(credits * MICRO))


def share(micro, fraction: float):
    """``fraction`` of integer micro-credit amount(s), in whole micro-credits (the fraction is rounded
    to parts per million first, so the result is exact integer arithmetic on every machine)."""
    return micro * round(fraction * MICRO) // MICRO


def to_credits(micro) -> float | np.ndarray:
    """Micro-credits -> credits, for reports and plots only."""
    return np.asarray(micro, dtype=np.float64) / MICRO if np.ndim(micro) else micro / MICRO
