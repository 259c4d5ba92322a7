"""Ranking metrics with binary relevance, vectorized over users.

``ranked`` is [B, L] item ids, best first, -1 for an empty slot; ``targets`` is
[B, T] held-out item ids (-1 pads). With rel_j = 1 if the item at position j
(0-based) is a target::

    DCG@k    = sum_{j<k} rel_j / log2(j + 2)
    IDCG@k   = sum_{j<min(k, |T|)} 1 / log2(j + 2)
    NDCG@k   = DCG@k / IDCG@k                     (0 for a user without targets)
    Recall@k = |top-k  &  T| / |T|
    coverage = distinct items recommended in anyone's top-k / catalogue size

:func:`top_k` turns [B, I] scores into such a ranked list.
"""

from __future__ import annotations

import numpy as np


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """[B, I] -> [B, k] item ids by descending score (ties: lower id first); -inf items become -1."""
    k = min(k, scores.shape[1])
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    rows = np.arange(scores.shape[0])[:, None]
    order = np.lexsort((part, -scores[rows, part]), axis=1)
    out = part[rows, order]
    return np.where(np.isfinite(scores[rows, out]), out, -1)


def hits(ranked: np.ndarray, targets: np.ndarray, k: int) -> np.ndarray:
    """[B, min(k, L)] bool: is the item at each of the first k positions a target."""
    top = ranked[:, :k]
    return ((top[:, :, None] == targets[:, None, :]) & (top[:, :, None] >= 0)).any(-1)


def ndcg(ranked: np.ndarray, targets: np.ndarray, k: int = 10) -> np.ndarray:
    """[B] NDCG@k per user."""
    h = hits(ranked, targets, k)
    discount = 1.0 / np.log2(np.arange(k) + 2.0)
    dcg = h @ discount[: h.shape[1]]
    n_targets = np.minimum((targets >= 0).sum(1), k)
    idcg = np.r_[0.0, np.cumsum(discount)][n_targets]
    return np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0)


def recall(ranked: np.ndarray, targets: np.ndarray, k: int = 50) -> np.ndarray:
    """[B] Recall@k per user: the share of its targets found in the first k."""
    found = ((targets[:, :, None] == ranked[:, None, :k]) & (targets[:, :, None] >= 0)).any(-1).sum(1)
    n = (targets >= 0).sum(1)
    return np.where(n > 0, found / np.maximum(n, 1), 0.0)


def coverage(ranked: np.ndarray, n_items: int, k: int = 10) -> float:
    top = ranked[:, :k]
    return float(np.unique(top[top >= 0]).size / n_items)
