"""Classic recommenders on the same split, for the comparison table: popularity, item-kNN, PureSVD, and the tuned ones.

``popularity``, ``itemknn`` and ``mf`` are the textbook algorithms on the config's signals (``neighbours``,
``rank``), untuned; :data:`scenarios.recsys.tuned.TUNED` are the strong baselines with hyper-parameters chosen
on the validation users. Each scores every item for a batch of users from train-fitted signals, removes the
user's history and the items not yet released at the request, and returns the top ``k``.
"""

from __future__ import annotations

import numpy as np

from scenarios.recsys.data import Split
from scenarios.recsys.ranking import top_k
from scenarios.recsys.signals import Signals
from scenarios.recsys.tuned import TUNED

BASELINES = ("popularity", "itemknn", "mf", *TUNED)

__all__ = ["BASELINES", "recommend", "scores", "top_k"]


def scores(name: str, data: Split, signals: Signals, users: np.ndarray) -> np.ndarray:
    """[B, I] scores of a baseline, history and unreleased items at -inf."""
    if name == "popularity":
        s = np.broadcast_to(signals.popularity, (users.size, data.n_items)).astype(np.float64)
    elif name == "itemknn":
        s = (data.history_matrix(users) @ signals.cosine).toarray().astype(np.float64)
    elif name == "mf":
        s = ((data.history_matrix(users) @ signals.factors) @ signals.factors.T).astype(np.float64)
    elif name in TUNED:
        s = signals.tuned.score(name, data, users)
    else:
        raise ValueError(f"unknown baseline {name!r}; expected one of {BASELINES}")
    return data.strike(s + 1e-9 * signals.popularity, users)  # ties (e.g. no neighbours) go to the more popular


def recommend(name: str, data: Split, signals: Signals, users: np.ndarray, k: int = 10,
              chunk: int = 1024) -> np.ndarray:
    """[B, k] recommendations, users scored ``chunk`` at a time."""
    return np.concatenate([top_k(scores(name, data, signals, users[i:i + chunk]), k)
                           for i in range(0, max(users.size, 1), chunk)]) if users.size else np.zeros((0, k), int)
