"""Write the small MovieLens-format fixture the tests load (generated, never downloaded).

    python -m scenarios.recsys.fixture tests/fixtures/movielens

writes ``ml-100k/u.data`` + ``u.item`` and ``ml-latest-small/ratings.csv`` + ``movies.csv``:
the same interactions (a small synthetic world, 5-star ratings drawn from how much each user likes
each item) in both formats, so the two loaders can be checked against each other and against the
generator. The same call writes the same bytes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from scenarios.recsys.movielens import ML100K_GENRES
from scenarios.recsys.synthetic import WorldConfig, generate

WORLD = WorldConfig(users=60, items=80, genres=5, mean_history=20, min_events=12, pool=60)
SEED = 7
EPOCH = 874_724_710  # the first timestamp of MovieLens 100K; time t days -> EPOCH + round(t * 86400)


def ratings(seed: int = SEED) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(user id, item id, rating 1-5, unix time, item genre) with MovieLens-style 1-based ids."""
    log, truth = generate(WORLD, seed)
    rng = np.random.default_rng([seed, 99])
    taste = truth.user_taste.mean(1)[log.user]
    like = np.einsum("ed,ed->e", taste, truth.item_vector[log.item])
    stars = np.clip(np.round(3 + 2 * like + rng.normal(0, 0.7, like.size)), 1, 5).astype(np.int64)
    stamp = EPOCH + np.round(log.time * 86_400).astype(np.int64)
    order = np.lexsort((log.item, stamp, log.user))
    return (log.user[order] + 1, log.item[order] + 1, stars[order], stamp[order], log.item_genre)


def write(folder: Path, seed: int = SEED) -> list[Path]:
    user, item, stars, stamp, genre = ratings(seed)
    ml100k, latest = folder / "ml-100k", folder / "ml-latest-small"
    ml100k.mkdir(parents=True, exist_ok=True)
    latest.mkdir(parents=True, exist_ok=True)
    names = ML100K_GENRES[1:1 + WORLD.genres]  # genre g of the world is MovieLens genre g + 1
    with open(ml100k / "u.data", "w") as f:
        f.writelines(f"{u}\t{i}\t{r}\t{t}\n" for u, i, r, t in zip(user, item, stars, stamp))
    with open(ml100k / "u.item", "w", encoding="latin-1") as f:
        for i, g in enumerate(genre, start=1):
            flags = ["0"] * len(ML100K_GENRES)
            flags[g + 1] = "1"
            f.write(f"{i}|Movie {i} (1998)|01-Jan-1998||http://example.org/{i}|{'|'.join(flags)}\n")
    with open(latest / "ratings.csv", "w") as f:
        f.write("userId,movieId,rating,timestamp\n")
        f.writelines(f"{u},{i},{r}.0,{t}\n" for u, i, r, t in zip(user, item, stars, stamp))
    with open(latest / "movies.csv", "w") as f:
        f.write("movieId,title,genres\n")
        f.writelines(f'{i},"Movie {i}, The (1998)",{names[g]}\n' for i, g in enumerate(genre, start=1))
    return [ml100k / "u.data", ml100k / "u.item", latest / "ratings.csv", latest / "movies.csv"]


if __name__ == "__main__":
    for path in write(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/movielens")):
        print(path)
