"""The rule interpreter's compiled path for large populations: one pass per (observation, term) (numba).

:func:`agents.rules.evaluate`'s large path on numpy took, per term column, a gather of the observed
features, two comparisons, a shift and an and: six passes over [U, N] a term, most of an auction step's
rule work at N = 10k. Here each term column is read once per distinct observation, without a branch (a rule's
outcome is as good as random to the branch predictor).
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
    which LLVM vectorizes (23 -> 4 us for 10k rules); with several, the gather of each term's feature keeps
    the loop scalar. Feature indices are read as unsigned (they are never negative), which spares numba's
    wraparound check; shifts are done in int32, which vectorizes where uint8 shifts do not."""
    rules, terms = op.shape
    for u in range(distinct.shape[0]):
        x = distinct[u]
        h = holds[u].view(np.uint8)
        h[:] = 1
        for t in range(terms):  # no branch: an unused term's mask (0b111) holds at every sign
            features, ops, values = feature[:, t], op[:, t], value[:, t]
            if x.size == 1:
                observed = x[0]
                for n in range(rules):
                    sign = np.int32(2 * (observed > values[n]) + (observed == values[n]))
                    h[n] &= np.uint8((np.int32(ops[n]) >> sign) & 1)
            else:
                for n in range(rules):
                    seen = x[np.uint16(features[n])]
                    sign = np.int32(2 * (seen > values[n]) + (seen == values[n]))
                    h[n] &= np.uint8((np.int32(ops[n]) >> sign) & 1)
