"""MovieLens files from a local path, as an interaction log (implicit feedback).

Two formats, told apart by the file name (or found in the folder given):

* ``u.data`` (MovieLens 100K): ``user<TAB>item<TAB>rating<TAB>timestamp``, no header; genres
  from ``u.item`` beside it when present (``id|title|date|video|url|`` then one 0/1 flag per genre,
  the first flag set is the item's genre);
* ``ratings.csv`` (MovieLens latest / 25M): header ``userId,movieId,rating,timestamp``; genres
  from ``movies.csv`` beside it when present (``movieId,title,genres`` with ``A|B``; the first one).

Ratings at or above ``min_rating`` become interactions; ids are re-numbered 0..n-1 in order of
the original ids; time is in days since the first rating. Without a genre file every item has
genre 0. Nothing is downloaded: point ``recsys.path`` at your copy.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from scenarios.recsys.data import Interactions

FILES = ("u.data", "ratings.csv")
ML100K_GENRES = ("unknown", "Action", "Adventure", "Animation", "Children's", "Comedy", "Crime", "Documentary",
                 "Drama", "Fantasy", "Film-Noir", "Horror", "Musical", "Mystery", "Romance", "Sci-Fi", "Thriller",
                 "War", "Western")


class MovieLensError(ValueError):
    """A path or file that cannot be read; the message names it."""


def find(path: str | Path) -> Path:
    path = Path(path)
    if path.is_dir():
        for name in FILES:
            if (path / name).is_file():
                return path / name
        raise MovieLensError(f"{path}: no {' or '.join(FILES)} in this folder")
    if not path.is_file():
        raise MovieLensError(f"{path}: no such file")
    if path.name not in FILES:
        raise MovieLensError(f"{path}: expected a file named {' or '.join(FILES)}")
    return path


def load(path: str | Path, min_rating: float = 0.0) -> Interactions:
    file = find(path)
    try:
        if file.name == "u.data":
            raw = np.loadtxt(file, dtype=np.float64, ndmin=2)
        else:
            raw = np.loadtxt(file, dtype=np.float64, delimiter=",", skiprows=1, ndmin=2)
    except ValueError as err:
        raise MovieLensError(f"{file}: not a MovieLens ratings file ({err})") from None
    if raw.shape[1] != 4:
        raise MovieLensError(f"{file}: expected 4 columns (user, item, rating, timestamp), found {raw.shape[1]}")
    raw = raw[raw[:, 2] >= min_rating]
    users, user = np.unique(raw[:, 0].astype(np.int64), return_inverse=True)
    items, item = np.unique(raw[:, 1].astype(np.int64), return_inverse=True)
    time = (raw[:, 3] - raw[:, 3].min()) / 86_400.0 if raw.size else raw[:, 3]
    genre, names = _genres(file, items)
    return Interactions(user=user.astype(np.int64), item=item.astype(np.int64), time=time, n_users=users.size,
                        n_items=items.size, item_genre=genre, genres=names)


def _genres(file: Path, items: np.ndarray) -> tuple[np.ndarray, tuple[str, ...]]:
    """Each item's first genre (0 where unknown), and the genre names."""
    first: dict[int, str] = {}
    if file.name == "u.data" and (file.parent / "u.item").is_file():
        with open(file.parent / "u.item", encoding="latin-1") as f:
            for line in f:
                parts = line.rstrip("\n").split("|")
                if len(parts) >= 5 + len(ML100K_GENRES):
                    flags = parts[5:5 + len(ML100K_GENRES)]
                    first[int(parts[0])] = next((g for g, x in zip(ML100K_GENRES, flags) if x == "1"), "unknown")
    elif file.name == "ratings.csv" and (file.parent / "movies.csv").is_file():
        with open(file.parent / "movies.csv", encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                first[int(row["movieId"])] = row["genres"].split("|")[0]
    if not first:
        return np.zeros(items.size, dtype=np.int64), ("unknown",)
    names = tuple(sorted(set(first.values()) | {"unknown"}))
    index = {g: i for i, g in enumerate(names)}
    return np.array([index[first.get(int(i), "unknown")] for i in items], dtype=np.int64), names
