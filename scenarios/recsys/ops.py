"""The operators a recsys skill can run, per role, vectorized over a batch of requests.

Each operator is a spec (parameters with default, range and type; the sentence
an LLM reads) and a numpy function over the requests the clause applies to:

* recall   ``f(req, rows, p) -> [m, I]`` non-negative candidate scores (0: not proposed);
           the role adds every applied source's scores, each scaled to max 1 and by its
           ``weight``, and keeps the top candidates;
* rank     ``f(req, rows, cand, p) -> [m, C]`` a term per candidate; the role z-normalises
           each term over the user's candidates and sums them by ``weight``;
* rerank   ``f(req, rows, ranked, p) -> [m, R]`` a reordered list (-1: empty slot); the role
           applies its clauses in order.

``rows`` index the batch (``req``: :class:`scenarios.recsys.pipeline.Requests`).

The tuned baselines (:data:`TUNED`: EASE^R, item-kNN, PureSVD, trending, next-item; scenarios/recsys/tuned.py)
are a recall source and a rank term each, with their hyper-parameters as chosen on validation and only a
``weight`` here. :data:`HARM` are operators that hurt on any data by construction (the planted harmful skills
of ``recsys.harm = "any_data"``). :data:`LEARNED` are sources whose scores the run trains (``learned``:
learned_recall.py, under agents.objective = ca_pg). Edits that add a skill draw from :func:`addable`: the
classic operators only, unless ``recsys.catalogue = "full"`` (then the tuned ones too); never :data:`HARM` or
:data:`LEARNED`.

Without genre data (every item genre 0) ``genre`` and ``diversify`` do nothing: :data:`GENRE_BASED`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from scenarios.recsys.tuned import TUNED


@dataclass(frozen=True)
class Operator:
    params: dict[str, tuple[float, float, float, bool]]  # name -> (default, low, high, integer)
    describe: str  # the LLM's sentence; {name} fields are the parameters
    run: Callable


WEIGHT = (1.0, 0.0, 16.0, False)
SEEDS = (3, 1, 200, True)
DAYS = (60.0, 1.0, 5000.0, False)


# ------------------------------------------------------------------ recall sources
def _normalised(scores: np.ndarray) -> np.ndarray:
    top = scores.max(1, keepdims=True)
    return np.where(top > 0, scores / np.where(top > 0, top, 1.0), 0.0)


def recall_covis(req, rows, p):
    return _normalised((req.recent(rows, int(p["seeds"])) @ req.signals.covis).toarray())


def recall_knn(req, rows, p):
    return _normalised((req.recent(rows, int(p["seeds"])) @ req.signals.cosine).toarray())


def recall_embed(req, rows, p):
    E = req.signals.embedding
    query = req.recent(rows, int(p["seeds"])) @ E
    return _normalised(np.maximum(query @ E.T, 0.0))


def recall_popular(req, rows, p):
    pop = req.signals.popularity
    return np.broadcast_to(pop / max(pop.max(), 1.0), (rows.size, pop.size)).copy()


def recall_fresh(req, rows, p):
    """Popular items released within ``days`` before the request."""
    age = req.now[rows, None] - req.data.item_release[None, :]
    pop = req.signals.popularity[None, :]
    return _normalised(np.where((age >= 0) & (age <= p["days"]), 1.0 + pop, 0.0))


def recall_editorial(req, rows, p):
    """The sponsored catalogue, most popular first, whatever the user likes (a business push)."""
    spon = req.data.sponsored
    score = np.where(spon, 1.0 + req.signals.popularity / max(req.signals.popularity.max(), 1.0), 0.0)
    keep = np.argsort(-score, kind="stable")[: int(p["n"])]
    out = np.zeros(score.size)
    out[keep] = score[keep]
    return np.broadcast_to(_normalised(out[None, :]), (rows.size, score.size)).copy()


def recall_learned(req, rows, p):
    """The run's learned recall (learned_recall.py), trained by agents.objective = ca_pg."""
    if req.learned is None:
        raise ValueError("the learned recall source runs only where agents.objective trains it (ca_pg)")
    return _normalised(req.learned.scores(req.users[rows], int(p["seeds"])))


def recall_tuned(name):
    def run(req, rows, p):
        return _normalised(np.maximum(req.baseline(name)[rows], 0.0))
    return run


# ------------------------------------------------------------------ rank terms
def _gather(dense: np.ndarray, cand: np.ndarray) -> np.ndarray:
    return np.take_along_axis(dense, np.maximum(cand, 0), axis=1)


def rank_mf(req, rows, cand, p):
    user = req.history(rows) @ req.signals.factors  # [m, d]
    return np.einsum("md,mcd->mc", user, req.signals.factors[np.maximum(cand, 0)])


def rank_recency(req, rows, cand, p):
    age = np.maximum(req.now[rows, None] - req.data.item_release[np.maximum(cand, 0)], 0.0)
    return np.exp(-age / p["days"])


def rank_classics(req, rows, cand, p):
    """Older is better: the catalogue's classics first."""
    age = np.maximum(req.now[rows, None] - req.data.item_release[np.maximum(cand, 0)], 0.0)
    return np.minimum(age / p["days"], 10.0)


def rank_popularity(req, rows, cand, p):
    return np.log1p(req.signals.popularity[np.maximum(cand, 0)])


def rank_covis(req, rows, cand, p):
    return _gather((req.recent(rows, int(p["seeds"])) @ req.signals.covis).toarray(), cand)


def rank_genre(req, rows, cand, p):
    """Share of the user's last ``seeds`` items in the candidate's genre."""
    share = req.genre_share(rows, int(p["seeds"]))  # [m, G]
    return np.take_along_axis(share, req.data.item_genre[np.maximum(cand, 0)], axis=1)


def rank_noise(req, rows, cand, p):
    """A uniform draw per (user, item) that no data informs, fixed by their ids (a splitmix64 hash), so that
    the same request gets the same list in every rollout."""
    with np.errstate(over="ignore"):
        h = req.users[rows].astype(np.uint64)[:, None] * np.uint64(0x9E3779B97F4A7C15) \
            + np.maximum(cand, 0).astype(np.uint64)
        h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return ((h ^ (h >> np.uint64(31))) >> np.uint64(11)).astype(np.float64) / 2.0 ** 53


def rank_tuned(name):
    def run(req, rows, cand, p):
        return _gather(req.baseline(name)[rows], cand)
    return run


# ------------------------------------------------------------------ rerank steps
def _reorder(ranked: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Stable sort of each row by key (False/0 first); empty slots last."""
    key = np.where(ranked >= 0, key.astype(np.int64), 2)
    order = np.argsort(key, axis=1, kind="stable")
    return np.take_along_axis(ranked, order, axis=1)


def rerank_diversify(req, rows, ranked, p):
    """At most ``cap`` items of one genre before the others: items over the cap move behind."""
    genre = np.where(ranked >= 0, req.data.item_genre[np.maximum(ranked, 0)], -1)
    onehot = (genre[:, :, None] == np.arange(req.data.n_genres)[None, None, :])
    before = np.cumsum(onehot, axis=1) - onehot  # same-genre items earlier in the list
    seen = np.take_along_axis(before, np.maximum(genre, 0)[:, :, None], axis=2)[:, :, 0]
    return _reorder(ranked, seen >= p["cap"])


def rerank_boost_new(req, rows, ranked, p):
    """Move up to ``n`` items released within ``days`` to the front, in their order."""
    age = req.now[rows, None] - req.data.item_release[np.maximum(ranked, 0)]
    new = (ranked >= 0) & (age <= p["days"])
    return _reorder(ranked, ~(new & (np.cumsum(new, axis=1) <= p["n"])))


def rerank_bury_old(req, rows, ranked, p):
    age = req.now[rows, None] - req.data.item_release[np.maximum(ranked, 0)]
    return _reorder(ranked, age > p["days"])


def rerank_pin_sponsored(req, rows, ranked, p):
    """Pin the ``n`` most popular sponsored items the user has not met at the top (a business rule)."""
    n = int(p["n"])
    spon = req.sponsored_order  # sponsored item ids, most popular first
    unseen = ~np.asarray(req.history(rows)[:, spon].toarray(), dtype=bool)
    pick = np.argsort(~unseen, axis=1, kind="stable")[:, :n]
    pinned = np.where(np.take_along_axis(unseen, pick, axis=1), spon[pick], -1)
    rest = np.where((ranked[:, :, None] == pinned[:, None, :]).any(-1), -1, ranked)
    rest = _reorder(rest, np.zeros_like(rest))
    return np.concatenate([pinned, rest], axis=1)[:, : ranked.shape[1]]


def rerank_pin_consumed(req, rows, ranked, p):
    """Pin the user's ``n`` newest history items at the top: things it has already consumed, never a target."""
    users = req.users[rows]
    end = req.data.hist_ptr[users + 1]
    back = end[:, None] - 1 - np.arange(int(p["n"]))[None, :]
    own = back >= req.data.hist_ptr[users][:, None]
    pinned = np.where(own, req.data.hist_item[np.where(own, back, 0)], -1)
    return np.concatenate([pinned, ranked], axis=1)[:, : ranked.shape[1]]


def rerank_truncate(req, rows, ranked, p):
    """Keep the ``n`` best-ranked items; the slots after them stay empty."""
    return np.where(np.arange(ranked.shape[1])[None, :] < p["n"], ranked, -1)


CATALOGUE: dict[str, dict[str, Operator]] = {
    "recall": {
        "covis": Operator({"seeds": SEEDS, "weight": WEIGHT},
                          "propose items co-visited within a few steps of the user's last {seeds:g} items "
                          "(weight {weight:g}).", recall_covis),
        "knn": Operator({"seeds": (20, 1, 200, True), "weight": WEIGHT},
                        "propose the nearest items (cosine over users) to the user's last {seeds:g} items "
                        "(weight {weight:g}).", recall_knn),
        "embed": Operator({"seeds": SEEDS, "weight": WEIGHT},
                          "propose the items closest in the latent space to the mean of the user's last "
                          "{seeds:g} items (weight {weight:g}).", recall_embed),
        "popular": Operator({"weight": (0.2, 0.0, 16.0, False)},
                            "propose the catalogue's most popular items (weight {weight:g}).", recall_popular),
        "fresh": Operator({"days": DAYS, "weight": (0.5, 0.0, 16.0, False)},
                          "propose popular items released in the last {days:g} days (weight {weight:g}).",
                          recall_fresh),
        "editorial": Operator({"n": (40, 1, 1000, True), "weight": (4.0, 0.0, 16.0, False)},
                              "always propose the {n:g} most popular sponsored items (weight {weight:g}).",
                              recall_editorial),
    },
    "rank": {
        "mf": Operator({"weight": WEIGHT}, "score candidates by the matrix-factorisation fit to the whole "
                                           "history (weight {weight:g}).", rank_mf),
        "recency": Operator({"weight": (0.5, 0.0, 16.0, False), "days": DAYS},
                            "prefer recently released items, halving about every {days:g} days "
                            "(weight {weight:g}).", rank_recency),
        "classics": Operator({"weight": WEIGHT, "days": (365.0, 1.0, 5000.0, False)},
                             "prefer older catalogue titles, more so for every {days:g} days of age "
                             "(weight {weight:g}).", rank_classics),
        "popularity": Operator({"weight": (0.2, 0.0, 16.0, False)},
                               "prefer popular items (weight {weight:g}).", rank_popularity),
        "covis": Operator({"seeds": SEEDS, "weight": (0.5, 0.0, 16.0, False)},
                          "prefer items co-visited with the user's last {seeds:g} items (weight {weight:g}).",
                          rank_covis),
        "genre": Operator({"seeds": (10, 1, 200, True), "weight": (0.5, 0.0, 16.0, False)},
                          "prefer the genres of the user's last {seeds:g} items (weight {weight:g}).", rank_genre),
    },
    "rerank": {
        "diversify": Operator({"cap": (3, 1, 10, True)},
                              "show at most {cap:g} items of one genre before the others.", rerank_diversify),
        "boost_new": Operator({"n": (2, 1, 10, True), "days": (30.0, 1.0, 5000.0, False)},
                              "move up to {n:g} items released in the last {days:g} days to the top.",
                              rerank_boost_new),
        "bury_old": Operator({"days": (730.0, 1.0, 5000.0, False)},
                             "move items older than {days:g} days behind all others.", rerank_bury_old),
        "pin_sponsored": Operator({"n": (3, 1, 10, True)},
                                  "pin the {n:g} most popular sponsored items the user has not seen at the top.",
                                  rerank_pin_sponsored),
    },
}
WHAT = {  # what each tuned baseline is, in the LLM's words
    "ease": "EASE^R (a linear item-item model fitted in closed form)", "itemknn_tuned": "tuned item-kNN",
        "puresvd_tuned": "tuned PureSVD", "trending": "recent popularity (interactions just before the request)",
        "next": "item-to-item transitions from the user's last items"}
CATALOGUE["recall"].update({n: Operator({"weight": WEIGHT}, f"propose the items {WHAT[n]} scores highest "
                                        "(weight {weight:g}).", recall_tuned(n)) for n in TUNED})
CATALOGUE["rank"].update({n: Operator({"weight": WEIGHT}, f"score candidates by {WHAT[n]} (weight {{weight:g}}).",
                                      rank_tuned(n)) for n in TUNED})
HARM = {"rank": {"noise": Operator({"weight": (3.0, 0.0, 16.0, False)},
                                   "score candidates by a draw no data informs (weight {weight:g}).", rank_noise)},
        "rerank": {"pin_consumed": Operator({"n": (2, 1, 10, True)}, "pin the user's {n:g} most recent items "
                                            "at the top.", rerank_pin_consumed),
                   "truncate": Operator({"n": (5, 1, 100, True)}, "show only the {n:g} best-ranked items.",
                                        rerank_truncate)}}
LEARNED = {"recall": {"learned": Operator({"seeds": (20, 1, 200, True), "weight": WEIGHT},
                                          "propose the items the learned recall scores highest for the user's last "
                                          "{seeds:g} items (weight {weight:g}).", recall_learned)}}
"""Sources a run trains (agents.objective = ca_pg): in the catalogue so a library can run them, never drawn by an edit."""
CATALOGUE["recall"].update(LEARNED["recall"])
for role, harm in HARM.items():
    CATALOGUE[role].update(harm)
ROLES = tuple(CATALOGUE)
GENRE_BASED = ("genre (rank)", "diversify (rerank)", "the genres feature", "the diversity_floor check")


def addable(catalogue: str) -> dict[str, tuple[str, ...]]:
    """role -> the operators an added skill may draw: ``classic`` leaves out the tuned baselines, ``full`` not;
    neither draws a :data:`HARM` operator."""
    return {role: tuple(op for op in operators if (catalogue == "full" or op not in TUNED)
                        and op not in HARM.get(role, {}) and op not in LEARNED.get(role, {}))
            for role, operators in CATALOGUE.items()}
