"""The rule interpreter's compiled path for large populations: one pass per (observation, term) (numba).

On numpy a term column costs a gather of the observed features, two comparisons, a shift and an and: six
passes over [U, N] a term. Here each term column is read once per distinct observation, without a branch (a
rule's outcome is as good as random to the branch predictor).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def evaluate(feature, op, value, distinct, holds) -> None:
    """``holds[u, n]``: rule n's condition on observation ``distinct[u]`` (every term's operator mask has
    the bit of sign(x - value): bit 0 below, 1 equal, 2 above).

    Term by term, over every rule: the rules' arrays are column-major (:func:`agents.rules.empty_rules`), so a
    term's column is contiguous. In a world of one feature every term reads it and the loop has no gather,
    which LLVM vectorizes; with several, the gather of each term's feature keeps
    the loop scalar. Feature indices are read as unsigned (they are never negative), which spares numba's
    wraparound check."""
    rules, terms = op.shape
    for u in range(distinct.shape[0]):
        x = distinct[u]
        h = holds[u].view(np.uint8)
        h[:] = 1
        for t in range(terms):  # no branch: an unused term's mask (0b111) holds at every sign
            features, ops, values = feature[:, t], op[:, t], value[:, t]
            if x.size == 1:  # every term reads feature 0: no gather
                for n in range(rules):
                    h[n] &= _holds(x[0], values[n], ops[n])
            else:
                for n in range(rules):
                    h[n] &= _holds(x[np.uint16(features[n])], values[n], ops[n])


@numba.njit(cache=True, nogil=True, inline="always")
def _holds(observed, threshold, op):
    """1 where ``observed`` stands to ``threshold`` as the operator mask ``op`` allows, else 0 (in int32: it
    vectorizes, where uint8 shifts do not)."""
    sign = np.int32(2 * (observed > threshold) + (observed == threshold))
    return np.uint8((np.int32(op) >> sign) & 1)
