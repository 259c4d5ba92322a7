"""Sparse helpers of the recsys signals and the tuned baselines: a user's train events in time order, item-item
cosine, the k strongest entries of each row. Public here because both scenarios/recsys/signals.py and
scenarios/recsys/tuned.py build on them (and tuned reads the signals, so they live in neither)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from scenarios.recsys.data import Split, _ragged_index


def train_sequences(data: Split) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ptr, items, times): each user's train segment in time order (a prefix of its history)."""
    train_len = np.diff(data.train.indptr)  # no repeats within a segment: nnz = events
    index = _ragged_index(data.hist_ptr[:-1], train_len)
    return np.r_[0, np.cumsum(train_len)], data.hist_item[index], data.hist_time[index]


def cosine(X: sp.csr_matrix, norm: np.ndarray, k: int, block: int = 2048) -> sp.csr_matrix:
    """Item-item cosine of the user columns, the k largest per item, ``block`` items at a time (bounded memory)."""
    XT = X.T.tocsr().astype(np.float32)
    parts = []
    for lo in range(0, X.shape[1], block):
        g = (XT[lo:lo + block] @ X).tocsr()
        g.setdiag(0, k=lo)  # the block's own items sit on the diagonal shifted by lo
        g.eliminate_zeros()
        rows = lo + np.repeat(np.arange(g.shape[0]), np.diff(g.indptr))
        g.data = (g.data / (norm[rows] * norm[g.indices])).astype(np.float32)
        parts.append(top_per_row(g, k))
    return sp.vstack(parts).tocsr()


def top_per_row(m: sp.csr_matrix, k: int) -> sp.csr_matrix:
    """Keep the k largest entries of each row (ties: lower column first)."""
    m = m.tocsr()
    m.sum_duplicates()
    row = np.repeat(np.arange(m.shape[0]), np.diff(m.indptr))
    order = np.lexsort((m.indices, -m.data, row))
    start = m.indptr[row[order]]
    keep = order[(np.arange(order.size) - start) < k]
    keep.sort()
    out = sp.csr_matrix((m.data[keep].astype(np.float32), m.indices[keep], np.r_[0, np.cumsum(
        np.bincount(row[keep], minlength=m.shape[0]))]), shape=m.shape)
    return out
