"""A zoo of recommendation worlds nobody tuned for: each one drawn from a wide family by its seed and
written in a MovieLens layout, so the same loader (movielens.py) reads it as it would a real file.

Why: the pipeline's operators and defaults were developed against synthetic.py's world and the shipped
fixture, so a gain measured there says little about a world made elsewhere. A zoo world mixes,
in random proportions, the structures a real log has:

* **latent-factor / genre clusters**: synthetic.py's generator at random parameters (2-24 clusters,
  latent dimension, taste sharpness ``beta``), the clusters written as genres or not written at all;
* **drift**: 1-8 taste phases per user, leaning 0-100% towards one favourite cluster each;
* **sequential next-item**: a share of each user's events (0-60%) replaced by one of the previous
  item's fixed successors (a first-order chain, as series and sequels make);
* **popularity**: a share of events (0-50%) replaced by a Zipf draw over the catalogue, on top of the
  generator's own log-normal popularity (spread 0.2-2.5);
* **cold start**: 0-90% of the items released during the timeline, short-history users (the split drops
  users below 2 x holdout + min_train);

at random sparsity (mean history 12-60), catalogue size (150-600 items), users (800-1600), rating scale
(1-5 stars, half stars to 5, 1-10) or implicit feedback (every rating 1), and one of the two layouts
(``u.data`` + ``u.item``, ``ratings.csv`` + ``movies.csv``). The same seed writes the same bytes.

Seeds: :data:`EVAL_SEEDS` were fixed before anything was measured on them (they have their own commit);
:data:`DEV_SEEDS` are the ones the mechanism was developed on. The two never overlap.

    python -m scenarios.recsys.zoo SEED FOLDER     # writes one world, prints its recipe
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from scenarios.recsys.movielens import FILES
from scenarios.recsys.synthetic import WorldConfig, generate

EVAL_SEEDS = tuple(range(5400, 5450))
"""The 50 evaluation worlds of experiments/recsys_compare.py ``--zoo``, in order; fixed before measuring."""
DEV_SEEDS = tuple(range(100, 120))
"""The worlds the mechanism was developed and checked on (never an evaluation seed)."""
EPOCH = 874_724_710
SCALES = {"stars": (1.0, 5.0, 1.0), "half-stars": (0.5, 5.0, 0.5), "ten": (1.0, 10.0, 1.0)}


@dataclass
class Recipe:
    """What a zoo world was drawn as (written beside it as recipe.json)."""

    seed: int
    world: dict  # the WorldConfig fields
    sequential: float  # share of events replaced by a successor of the previous item
    popular: float  # share of events replaced by a Zipf popularity draw
    zipf: float  # the Zipf exponent of those draws
    genres_written: bool
    feedback: str  # implicit, or one of SCALES
    layout: str  # u.data or ratings.csv


def recipe(seed: int) -> Recipe:
    """The world a seed names: every parameter drawn from the family's ranges."""
    rng = np.random.default_rng([seed, 54])
    world = WorldConfig(
        users=int(rng.integers(800, 1601)), items=int(rng.integers(150, 601)), genres=int(rng.integers(2, 25)),
        dim=int(rng.choice([4, 8, 16, 32])), mean_history=float(np.exp(rng.uniform(np.log(12), np.log(60)))),
        min_events=int(rng.integers(6, 16)), phases=int(rng.integers(1, 9)), favourites=int(rng.integers(1, 5)),
        drift=float(rng.uniform(0, 1)), beta=float(rng.uniform(0.5, 6)), novelty=float(rng.uniform(0, 3)),
        popularity_sigma=float(rng.uniform(0.2, 2.5)), catalogue_share=float(rng.uniform(0.1, 1.0)),
        pool=int(rng.integers(60, 240)))
    mix = rng.dirichlet(np.ones(3))  # generator, sequential, popular: the last two capped
    return Recipe(seed, asdict(world), float(min(mix[1], 0.6)), float(min(mix[2], 0.5)), float(rng.uniform(0.6, 1.3)),
                  bool(rng.random() < 0.7), str(rng.choice(["implicit", *SCALES])), str(rng.choice(FILES)))


def ratings(r: Recipe) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(user id, item id, rating, unix time, item cluster), 1-based ids, by user then time."""
    cfg = WorldConfig(**r.world)
    log, truth = generate(cfg, r.seed)
    rng = np.random.default_rng([r.seed, 55])
    order = np.lexsort((log.item, log.time, log.user))
    user, item, time = log.user[order], log.item[order].copy(), log.time[order]
    successors = rng.integers(cfg.items, size=(cfg.items, 3))
    zipf_order = rng.permutation(cfg.items)
    zipf = 1.0 / np.arange(1, cfg.items + 1) ** r.zipf
    draw = rng.random(item.size)
    same_user = np.r_[False, user[1:] == user[:-1]]
    for e in np.flatnonzero(draw < r.sequential + r.popular):  # in time order: a chain follows its replacements
        if draw[e] < r.sequential and same_user[e]:
            item[e] = successors[item[e - 1], rng.integers(3)]
        elif draw[e] >= r.sequential:
            item[e] = zipf_order[rng.choice(cfg.items, p=zipf / zipf.sum())]
    first = np.unique(user * cfg.items + item, return_index=True)[1]  # a user consumes an item once
    keep = np.zeros(item.size, dtype=bool)
    keep[first] = True
    user, item, time = user[keep], item[keep], time[keep]
    stamp = EPOCH + np.round(time * 86_400).astype(np.int64)
    if r.feedback == "implicit":
        stars = np.ones(item.size)
    else:
        lo, hi, step = SCALES[r.feedback]
        like = np.einsum("ed,ed->e", truth.user_taste.mean(1)[user], truth.item_vector[item])
        raw = lo + (hi - lo) * (0.5 + 0.5 * np.tanh(2 * like + rng.normal(0, 0.5, like.size)))
        stars = np.clip(np.round(raw / step) * step, lo, hi)
    order = np.lexsort((item, stamp, user))
    return user[order] + 1, item[order] + 1, stars[order], stamp[order], log.item_genre


def write(seed: int, folder: Path) -> Path:
    """Write world ``seed`` into ``folder`` (its ratings file, the genre file where the recipe has one, and
    recipe.json); returns the ratings file, what ``recsys.path`` names."""
    r = recipe(seed)
    user, item, stars, stamp, genre = ratings(r)
    folder.mkdir(parents=True, exist_ok=True)
    fmt = (lambda x: f"{x:g}")
    if r.layout == "u.data":
        path = folder / "u.data"
        with open(path, "w") as f:
            f.writelines(f"{u}\t{i}\t{fmt(s)}\t{t}\n" for u, i, s, t in zip(user, item, stars, stamp))
        if r.genres_written:
            with open(folder / "u.item", "w", encoding="latin-1") as f:
                for i, g in enumerate(genre, start=1):
                    flags = ["0"] * 19
                    flags[1 + g % 18] = "1"  # at most 18 named genres in the 100K layout: clusters beyond share
                    f.write(f"{i}|Item {i} (1998)|01-Jan-1998||http://example.org/{i}|{'|'.join(flags)}\n")
    else:
        path = folder / "ratings.csv"
        with open(path, "w") as f:
            f.write("userId,movieId,rating,timestamp\n")
            f.writelines(f"{u},{i},{fmt(s)},{t}\n" for u, i, s, t in zip(user, item, stars, stamp))
        if r.genres_written:
            with open(folder / "movies.csv", "w") as f:
                f.write("movieId,title,genres\n")
                f.writelines(f'{i},"Item {i} (1998)",cluster-{g}\n' for i, g in enumerate(genre, start=1))
    (folder / "recipe.json").write_text(json.dumps(asdict(r), indent=1) + "\n")
    return path


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: python -m scenarios.recsys.zoo SEED FOLDER")
    print(write(int(sys.argv[1]), Path(sys.argv[2])))
    print((Path(sys.argv[2]) / "recipe.json").read_text())
