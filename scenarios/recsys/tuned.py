"""Strong baselines, fitted on the train segments, their hyper-parameters chosen on the validation users.

A gain over weak or untuned baselines proves little, so each of these gets a small grid, and every value is
scored by NDCG@k of the validation users' validation targets (the gate's measure); the test users are never
seen. Each scores ``[B, I]`` for a batch of users and is also an operator of the catalogue (ops.py), so the
pipeline can compose them:

* ``ease``           EASE^R (Steck 2019): P = (X^T X + lam I)^-1, B = -P / diag(P) off the diagonal, 0 on it;
                     a user with history row x scores x B. Over the ``ease_items`` most popular items (an
                     [n, n] inverse per lam); the others score 0.
* ``itemknn_tuned``  item-kNN: x S, S the item-item cosine kept to the best ``neighbours`` per item.
* ``puresvd_tuned``  PureSVD: x V_r V_r^T at the best rank r.
* ``trending``       recency-aware popularity: the item's train interactions in the ``days`` before the request
                     (nothing after it: no future).
* ``next``           item-to-item transitions (first-order Markov): T_ij = P(j follows i) over consecutive train
                     items of one user, summed over the user's last ``seeds`` items, exp(-decay) per step back.

The grids are nested where the algebra allows: one SVD at the largest rank, one cosine at the most neighbours.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import svds

from scenarios.recsys import sparse
from scenarios.recsys.data import VALIDATION, Split
from scenarios.recsys.ranking import ndcg, top_k
from scenarios.recsys.signals import Signals

TUNED = ("ease", "itemknn_tuned", "puresvd_tuned", "trending", "next")
GRIDS = {
    "ease": {"lam": (1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0)},
    "itemknn_tuned": {"neighbours": (5, 10, 20, 50, 100, 200)},
    "puresvd_tuned": {"rank": (4, 8, 16, 32, 64, 128)},
    "trending": {"days": (3.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 10000.0)},
    "next": {"seeds": (1, 2, 3, 5, 10), "decay": (0.0, 0.5, 1.5)},
}


@dataclass
class Tuned:
    params: dict[str, dict[str, float]]  # baseline -> its chosen hyper-parameters
    validation: dict[str, float]  # baseline -> validation NDCG@k at them
    ease_items: np.ndarray  # [n] the items EASE^R covers
    ease: np.ndarray  # [n, n] float32 B
    knn: sp.csr_matrix  # [I, I]
    svd: np.ndarray  # [I, r] float32
    events: np.ndarray  # [E] train events as item * span + day, sorted: trending counts a window by search
    span: float
    transitions: sp.csr_matrix  # [I, I] row-stochastic

    @property
    def best(self) -> str:
        """The baseline best on validation (the first on ties)."""
        return max(TUNED, key=lambda n: self.validation[n])

    def score(self, name: str, data: Split, users: np.ndarray) -> np.ndarray:
        """[B, I] raw scores (history and unreleased items not struck out)."""
        p = self.params[name]
        if name == "ease":
            return _ease_scores(data, users, self.ease_items, self.ease)
        if name == "itemknn_tuned":
            return (data.history_matrix(users) @ self.knn).toarray().astype(np.float64)
        if name == "puresvd_tuned":
            return ((data.history_matrix(users) @ self.svd) @ self.svd.T).astype(np.float64)
        if name == "trending":
            return _window_counts(self.events, self.span, data.now[users], p["days"], data.n_items)
        if name == "next":
            return (data.recent(users, int(p["seeds"]), p["decay"]) @ self.transitions).toarray().astype(np.float64)
        raise ValueError(f"unknown tuned baseline {name!r}; expected one of {TUNED}")


def fit(data: Split, signals: Signals, k: int, ease_items: int, seed: int) -> Tuned:
    """Every baseline at each value of its grid, scored on the validation users; keeps the best."""
    users = data.users(VALIDATION)
    X, popularity = data.train, signals.popularity

    def quality(scores) -> float:
        s = data.strike(scores(users) + 1e-9 * popularity, users)
        return float(ndcg(top_k(s, k), data.targets[users], k).mean())

    params, validation = {}, {}

    def choose(name, build):
        """build(**values) -> (state, scorer); keeps the best state."""
        best = None
        grid = GRIDS[name]
        for values in itertools.product(*grid.values()):
            p = dict(zip(grid, values))
            state, scorer = build(**p)
            q = quality(scorer)
            if best is None or q > best[0]:
                best = (q, p, state)
        validation[name], params[name] = best[0], best[1]
        return best[2]

    items = np.argsort(-popularity, kind="stable")[:ease_items]
    Xe = X[:, items].astype(np.float64)
    gram = (Xe.T @ Xe).toarray()

    def ease(lam):
        B = _ease(gram, lam)
        return B, lambda u: _ease_scores(data, u, items, B)

    B = choose("ease", ease)

    full = sparse.cosine(X, np.sqrt(np.maximum(popularity, 1.0)), max(GRIDS["itemknn_tuned"]["neighbours"]))

    def knn(neighbours):
        S = sparse.top_per_row(full, neighbours)
        return S, lambda u: (data.history_matrix(u) @ S).toarray().astype(np.float64)

    S = choose("itemknn_tuned", knn)

    r_max = max(1, min(max(GRIDS["puresvd_tuned"]["rank"]), min(X.shape) - 1))
    _, sv, vt = svds(X.astype(np.float64), k=r_max, v0=np.random.default_rng(seed).random(min(X.shape)))
    V = vt[np.argsort(-sv)].T.astype(np.float32)

    def svd(rank):
        Vr = V[:, :min(rank, r_max)]
        return Vr, lambda u: ((data.history_matrix(u) @ Vr) @ Vr.T).astype(np.float64)

    Vr = choose("puresvd_tuned", svd)

    events, span = _events(data)
    choose("trending", lambda days: (None, lambda u: _window_counts(events, span, data.now[u], days, data.n_items)))

    T = _transitions(data)
    choose("next", lambda seeds, decay: (None, lambda u: (data.recent(u, seeds, decay) @ T).toarray()
                                         .astype(np.float64)))
    return Tuned(params, validation, items, B, S, Vr, events, span, T)


def _ease(gram: np.ndarray, lam: float) -> np.ndarray:
    P = np.linalg.inv(gram + lam * np.eye(gram.shape[0]))
    B = -P / np.diag(P)[None, :]
    np.fill_diagonal(B, 0.0)
    return B.astype(np.float32)


def _ease_scores(data: Split, users: np.ndarray, items: np.ndarray, B: np.ndarray) -> np.ndarray:
    out = np.zeros((users.size, data.n_items))
    out[:, items] = data.history_matrix(users)[:, items] @ B
    return out


def _events(data: Split) -> tuple[np.ndarray, float]:
    _, item, time = sparse.train_sequences(data)
    span = float(max(time.max(initial=0.0), data.now.max(initial=0.0))) + 1.0
    return np.sort(item * span + np.maximum(time, 0.0)), span


def _window_counts(events: np.ndarray, span: float, now: np.ndarray, days: float, n_items: int) -> np.ndarray:
    """[B, I] train events of each item with now - days <= time < now."""
    base = np.arange(n_items)[None, :] * span
    hi = np.clip(now, 0.0, span)[:, None]
    lo = np.clip(now - days, 0.0, span)[:, None]
    return (np.searchsorted(events, base + hi) - np.searchsorted(events, base + lo)).astype(np.float64)


def _transitions(data: Split) -> sp.csr_matrix:
    ptr, item, _ = sparse.train_sequences(data)
    user = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))
    same = user[1:] == user[:-1]
    I = data.n_items
    counts = sp.csr_matrix((np.ones(int(same.sum()), dtype=np.float32), (item[:-1][same], item[1:][same])),
                           shape=(I, I))
    counts.sum_duplicates()
    out = np.asarray(counts.sum(1)).ravel()
    return (sp.diags(1.0 / np.maximum(out, 1.0)).astype(np.float32) @ counts).tocsr()
