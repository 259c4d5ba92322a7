"""Classic recommenders on the same split, for the comparison table: popularity, item-kNN, PureSVD.

Each scores every item for a batch of users from the same train-fitted signals the
pipeline reads, removes the user's history and the items not yet released at the request,
and returns the top ``k``.
"""

from __future__ import annotations

import numpy as np

from scenarios.recsys.data import Split
from scenarios.recsys.signals import Signals

BASELINES = ("popularity", "itemknn", "mf")


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """[B, I] -> [B, k] item ids by descending score (ties: lower id first); -inf items become -1."""
    k = min(k, scores.shape[1])
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    rows = np.arange(scores.shape[0])[:, None]
    order = np.lexsort((part, -scores[rows, part]), axis=1)
    out = part[rows, order]
    return np.where(np.isfinite(scores[rows, out]), out, -1)


def scores(name: str, data: Split, signals: Signals, users: np.ndarray) -> np.ndarray:
    """[B, I] scores of a classic recommender, history items at -inf."""
    H = data.history_matrix(users)
    if name == "popularity":
        s = np.broadcast_to(signals.popularity, (users.size, data.n_items)).astype(np.float64)
    elif name == "itemknn":
        s = (H @ signals.cosine).toarray().astype(np.float64)
    elif name == "mf":
        s = ((H @ signals.factors) @ signals.factors.T).astype(np.float64)
    else:
        raise ValueError(f"unknown baseline {name!r}; expected one of {BASELINES}")
    s = s + 1e-9 * signals.popularity  # ties (e.g. no neighbours at all) go to the more popular item
    s[H.nonzero()] = -np.inf
    s[~data.released(users)] = -np.inf
    return s


def recommend(name: str, data: Split, signals: Signals, users: np.ndarray, k: int = 10,
              chunk: int = 1024) -> np.ndarray:
    """[B, k] recommendations, users scored ``chunk`` at a time."""
    return np.concatenate([top_k(scores(name, data, signals, users[i:i + chunk]), k)
                           for i in range(0, max(users.size, 1), chunk)]) if users.size else np.zeros((0, k), int)
