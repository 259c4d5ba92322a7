"""A synthetic recommendation world whose truth is known.

Why synthetic: the metrics are exact (the held-out items are what the
generative model produced) and the size is a parameter, from a test-sized
world to 100k users x 20k items. The world has the structure each operator of
the pipeline exploits, so that no single signal is enough:

* **genres and latent tastes**: G genre centroids in R^d; an item's vector is
  its genre's centroid plus noise (matrix factorisation and embedding
  neighbours recover it);
* **taste drift**: a user's life is cut into ``phases``; each phase leans
  towards one of the user's favourite genres (by ``drift``), so recent history
  predicts the held-out items better than old history (co-visitation of the
  last items);
* **popularity**: items have log-normal popularity; candidates are proposed
  in proportion to it (a popularity prior helps, but only a little);
* **time**: most items are released during the timeline and are consumed
  soon after release (a recency signal helps).

Generation, per user and phase (all users of a chunk at once): a pool of
candidate items, half drawn by popularity from the whole catalogue and half
from the phase's genre; items not yet released by the end of the phase, or
already consumed, are struck out; the phase's items are the top-n of
``beta * <taste, item> + novelty * [released recently] + Gumbel`` (sampling
without replacement from the softmax, by the Gumbel-top-k trick). Each chosen
item gets a time between its release (or the phase start) and the phase end,
close to the former.

:data:`SHAPES` names the worlds the comparison runs (experiments/recsys_compare.py): each is a change of a
few fields of :class:`WorldConfig` away from the default, so that one world's results cannot be mistaken
for everyone's.
"""

from __future__ import annotations

from dataclasses import dataclass as plain_dataclass

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from scenarios.recsys.data import Interactions
from market.strict import STRICT


@dataclass(config=STRICT)
class WorldConfig:
    """The ``[recsys.world]`` table (``--set recsys.world.users=300``): the size and shape of the world."""

    users: int = Field(1500, ge=10)
    """Users of the synthetic world (each split into training history and held-out next items)."""
    items: int = Field(400, ge=20)
    """Items of the catalogue."""
    genres: int = Field(8, ge=2, le=64)
    """Genres; each item has one, each user's tastes lean towards a few."""
    dim: int = Field(16, ge=2, le=256)
    """d: dimension of the latent tastes."""
    mean_history: float = Field(30.0, gt=0)
    """Mean interactions per user (log-normal, at least ``min_events``)."""
    min_events: int = Field(12, ge=1)
    """Fewest interactions a user is given (the log-normal draw is raised to it)."""
    phases: int = Field(3, ge=1, le=16)
    """Taste phases per user: the drift that makes recent history count."""
    favourites: int = Field(3, ge=1)
    """Favourite genres per user; each phase leans towards one of them."""
    drift: float = Field(0.5, ge=0, le=1)
    """How far a phase's taste leans towards its genre, from the user's base taste (0: no drift, 1: only the
    phase's genre)."""
    beta: float = Field(4.0, ge=0)
    """Sharpness of taste: how much <taste, item> decides the choice."""
    novelty: float = Field(1.5, ge=0)
    """Score bonus of an item released less than ``novelty_days`` before the phase starts (or during it)."""
    novelty_days: float = Field(60.0, gt=0)
    """How recent a release counts as novel for ``novelty``'s bonus, in days."""
    popularity_sigma: float = Field(1.0, ge=0)
    """Spread of log-popularity."""
    catalogue_share: float = Field(0.3, ge=0, le=1)
    """Share of items already released at day 0; the others are released uniformly over the timeline."""
    days: float = Field(1000.0, gt=0)
    """Length of the timeline."""
    pool: int = Field(200, ge=10)
    """Candidate items proposed per user and phase."""
    genre_labels: bool = True
    """Whether the log carries the items' genres (false: every item is genre 0, as a MovieLens file without its
    genre file; the world is still generated from genres, only the pipeline cannot see them)."""


SHAPES: dict[str, dict] = {
    "default": {},
    "sparse": dict(mean_history=14.0, min_events=11),  # 11 = the least a user needs to be kept (2 x 3 + 5)
    "dense": dict(mean_history=60.0, min_events=20),
    "drift-strong": dict(phases=6, drift=0.9),
    "drift-weak": dict(drift=0.1),
    "skew-heavy": dict(popularity_sigma=2.0),
    "skew-light": dict(popularity_sigma=0.3),
    "no-genres": dict(genre_labels=False),
}
"""Named shapes of the world: the fields each changes from the default (the size is set apart)."""


@plain_dataclass
class Truth:
    """The generative model's latent variables (for oracles and checks)."""

    item_vector: np.ndarray  # [I, d]
    item_popularity: np.ndarray  # [I] log-popularity
    user_taste: np.ndarray  # [U, phases, d]
    user_favourites: np.ndarray  # [U, favourites] genre ids


def generate(cfg: WorldConfig, seed: int) -> tuple[Interactions, Truth]:
    """The interaction log and its truth; the same (cfg, seed) gives the same arrays, bit for bit."""
    rng = np.random.default_rng([seed, 1])
    I, G, d = cfg.items, cfg.genres, cfg.dim
    centroid = _unit(rng.standard_normal((G, d)))
    genre_share = rng.dirichlet(np.full(G, 2.0))
    genre = np.sort(rng.choice(G, size=I, p=genre_share))  # items sorted by genre: genre slices are ranges
    vector = _unit(centroid[genre] + 0.7 * _unit(rng.standard_normal((I, d))))
    log_pop = cfg.popularity_sigma * rng.standard_normal(I)
    release = np.where(rng.random(I) < cfg.catalogue_share, 0.0, rng.uniform(0, cfg.days, I))

    n = np.maximum(cfg.min_events, np.round(rng.lognormal(np.log(cfg.mean_history) - 0.18, 0.6, cfg.users)))
    n = np.minimum(n, I // 2).astype(np.int64)
    start = rng.uniform(0, 0.5 * cfg.days, cfg.users)
    span = rng.uniform(0.3, 1.0, cfg.users) * (cfg.days - start)
    favourites = np.stack([rng.choice(G, size=min(cfg.favourites, G), replace=False, p=genre_share)
                           for _ in range(cfg.users)])
    base = _unit(centroid[favourites].mean(1) + 0.5 * _unit(rng.standard_normal((cfg.users, d))))
    pick = rng.integers(favourites.shape[1], size=(cfg.users, cfg.phases))
    phase_genre = favourites[np.arange(cfg.users)[:, None], pick]  # each phase leans towards one favourite
    taste = _unit((1 - cfg.drift) * base[:, None, :] + cfg.drift * centroid[phase_genre])  # [U, P, d]

    weight = np.exp(log_pop)
    cum = np.cumsum(weight)
    bounds = np.searchsorted(genre, np.arange(G + 1))  # genre g holds items [bounds[g], bounds[g+1])
    users, items, times = [], [], []
    chunk = max(64, int(2e7 // I))
    for c, lo in enumerate(range(0, cfg.users, chunk)):
        u = np.arange(lo, min(lo + chunk, cfg.users))
        crng = np.random.default_rng([seed, 2, c])
        out = _chunk(cfg, crng, u, n[u], start[u], span[u], taste[u], phase_genre[u], vector, release, cum, bounds)
        users.append(out[0]), items.append(out[1]), times.append(out[2])
    labels, names = (genre, tuple(f"genre-{g}" for g in range(G))) if cfg.genre_labels else (0 * genre, ("unknown",))
    log = Interactions(user=np.concatenate(users), item=np.concatenate(items), time=np.concatenate(times),
                       n_users=cfg.users, n_items=I, item_genre=labels, genres=names, item_release=release)
    return log, Truth(vector, log_pop, taste, favourites)


def _chunk(cfg, rng, u, n, start, span, taste, phase_genre, vector, release, cum, bounds):
    B, P, I = u.size, cfg.pool, cfg.items
    edges = (np.arange(cfg.phases + 1)[None, :] * n[:, None]) // cfg.phases
    per_phase = np.diff(edges, axis=1)  # [B, phases] events per phase, as even as integers allow
    taken = np.zeros((B, I), dtype=bool)
    rows = np.arange(B)[:, None]
    users, items, times = [], [], []
    for p in range(cfg.phases):
        p0 = start + span * p / cfg.phases
        p1 = start + span * (p + 1) / cfg.phases
        half = P // 2
        pool = np.concatenate([
            np.searchsorted(cum, rng.random((B, half)) * cum[-1], side="right"),
            _in_genre(rng, cum, bounds, phase_genre[:, p], P - half),
        ], axis=1).clip(0, I - 1)
        pool.sort(axis=1)
        dup = np.zeros_like(pool, dtype=bool)
        dup[:, 1:] = pool[:, 1:] == pool[:, :-1]
        score = (cfg.beta * np.einsum("bd,bpd->bp", taste[:, p], vector[pool])
                 + cfg.novelty * (release[pool] >= (p0 - cfg.novelty_days)[:, None])
                 + rng.gumbel(size=pool.shape))
        banned = dup | taken[rows, pool] | (release[pool] > p1[:, None])
        score[banned] = -np.inf
        k = per_phase[:, p]
        top = np.argsort(-score, axis=1, kind="stable")[:, : max(int(k.max()), 1)]
        chosen = pool[rows, top]
        ok = (np.arange(top.shape[1])[None, :] < k[:, None]) & np.isfinite(score[rows, top])
        b, j = np.nonzero(ok)
        item = chosen[b, j]
        taken[b, item] = True
        begin = np.maximum(release[item], p0[b])
        t = begin + (p1[b] - begin) * rng.beta(1.0, 4.0, size=item.size)
        users.append(u[b]), items.append(item), times.append(t)
    return np.concatenate(users), np.concatenate(items), np.concatenate(times)


def _in_genre(rng, cum, bounds, genre, size):
    """[B, size] items drawn by popularity from each row's genre (the genre's slice of the catalogue)."""
    lo = np.where(bounds[genre] > 0, cum[np.maximum(bounds[genre] - 1, 0)], 0.0)
    hi = cum[np.maximum(bounds[genre + 1] - 1, 0)]
    target = lo[:, None] + rng.random((genre.size, size)) * (hi - lo)[:, None]
    return np.searchsorted(cum, target, side="right")


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)
