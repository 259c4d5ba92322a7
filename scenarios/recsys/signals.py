"""Collaborative signals fitted once on the train segments: what the pipeline's operators read.

* ``popularity``  train interactions per item;
* ``covis``       co-visitation: items met within ``window`` steps of each other in a user's
                  time-ordered train sequence, weighted 1/distance, normalised by
                  sqrt(pop_i pop_j), the ``neighbours`` strongest kept per item (session-style recall);
* ``cosine``      classic item-kNN: cosine of the items' user columns over whole train sets,
                  ``neighbours`` kept per item (Sarwar et al. 2001);
* ``factors``     PureSVD (Cremonesi et al. 2010): the top ``rank`` right singular vectors V of
                  the train matrix; a user with history row x scores items by x V V^T, which needs
                  no per-user fit, so test users' extra history is folded in for free;
* ``embedding``   V scaled by the singular values and normalised: item vectors for embedding
                  neighbours (cosine in the latent space);
* ``tuned``       the strong baselines with hyper-parameters chosen on the validation users
                  (:mod:`scenarios.recsys.tuned`), set by :func:`scenarios.recsys.world.load`.

Everything is sparse or [I, rank]; nothing is [U, I] dense.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import svds

from scenarios.recsys import sparse
from scenarios.recsys.data import Split


@dataclass
class Signals:
    popularity: np.ndarray  # [I] float
    covis: sp.csr_matrix  # [I, I]
    cosine: sp.csr_matrix  # [I, I]
    factors: np.ndarray  # [I, rank] float32
    embedding: np.ndarray  # [I, rank] float32, unit rows
    tuned: object | None = None  # scenarios.recsys.tuned.Tuned, set by world.load (tuned reads these signals: not imported here)


def fit(data: Split, rank: int, window: int, neighbours: int, seed: int) -> Signals:
    X = data.train
    popularity = np.asarray(X.sum(0)).ravel().astype(np.float64)
    norm = np.sqrt(np.maximum(popularity, 1.0))
    covis = sparse.top_per_row(_scaled(_covisitation(data, window), norm), neighbours)
    cosine = sparse.cosine(X, norm, neighbours)
    k = max(1, min(rank, min(X.shape) - 1))
    v0 = np.random.default_rng(seed).random(min(X.shape))
    _, s, vt = svds(X.astype(np.float64), k=k, v0=v0)
    order = np.argsort(-s)
    s, V = s[order], vt[order].T
    embedding = V * s
    embedding /= np.maximum(np.linalg.norm(embedding, axis=1, keepdims=True), 1e-12)
    return Signals(popularity, covis, cosine, V.astype(np.float32), embedding.astype(np.float32))


def _covisitation(data: Split, window: int) -> sp.csr_matrix:
    ptr, items, _ = sparse.train_sequences(data)
    user = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))
    rows, cols, vals = [], [], []
    for offset in range(1, window + 1):
        same = user[offset:] == user[:-offset]
        a, b = items[:-offset][same], items[offset:][same]
        w = np.full(a.size, 1.0 / offset, dtype=np.float32)
        rows += [a, b]
        cols += [b, a]
        vals += [w, w]
    I = data.n_items
    m = sp.coo_matrix((np.concatenate(vals), (np.concatenate(rows).astype(np.int32), np.concatenate(cols).astype(
        np.int32))), shape=(I, I)).tocsr()
    m.setdiag(0)
    m.eliminate_zeros()
    return m


def _scaled(m: sp.csr_matrix, norm: np.ndarray) -> sp.csr_matrix:
    """m_ij / (norm_i norm_j), in place on the stored entries."""
    m = m.tocsr()
    rows = np.repeat(np.arange(m.shape[0]), np.diff(m.indptr))
    m.data = (m.data / (norm[rows] * norm[m.indices])).astype(np.float32)
    return m
