"""The synthetic world's named shapes: each is a valid config, changes what its name says, and the default
world is the one it always was."""

import hashlib

import numpy as np
import pytest

from scenarios.cli.main import main as cli
from scenarios.recsys.synthetic import SHAPES, WorldConfig, generate

SIZE = dict(users=300, items=120, genres=5, dim=8)


def world(shape: str, seed: int = 2):
    return generate(WorldConfig(**SIZE, **SHAPES[shape]), seed)


def test_the_default_world_is_unchanged():
    """drift = 0.5 and genre labels on reproduce the generator as it was before they were keys (bit for bit)."""
    log, truth = world("default")
    digest = hashlib.sha256(b"".join(a.tobytes() for a in (log.user, log.item, log.time, log.item_genre,
                                                           truth.user_taste))).hexdigest()
    assert digest[:16] == "ad7ae46ed5264e0e"  # the generator of commit 1ce5082, before drift and genre_labels


def test_sparse_and_dense_change_the_history_length():
    counts = {s: np.bincount(world(s)[0].user).mean() for s in ("sparse", "default", "dense")}
    assert counts["sparse"] < 0.6 * counts["default"] and counts["dense"] > 1.4 * counts["default"]


def test_drift_moves_the_phase_tastes_apart():
    def phase_agreement(shape):  # mean cosine of a user's phase tastes with its mean taste
        taste = world(shape)[1].user_taste
        mean = taste.mean(1, keepdims=True)
        return float((taste * mean).sum(-1).mean() / np.linalg.norm(mean, axis=-1).mean())
    assert phase_agreement("drift-strong") < phase_agreement("default") < phase_agreement("drift-weak")


def test_popularity_skew_concentrates_the_interactions():
    def top_share(shape):  # share of interactions on the 10% most consumed items
        counts = np.sort(np.bincount(world(shape)[0].item, minlength=SIZE["items"]))[::-1]
        return counts[: SIZE["items"] // 10].sum() / counts.sum()
    assert top_share("skew-light") < top_share("default") < top_share("skew-heavy")


def test_no_genres_hides_the_labels_of_the_same_world():
    log, _ = world("default")
    blind, _ = world("no-genres")
    for name in ("user", "item", "time", "item_release"):
        np.testing.assert_array_equal(getattr(log, name), getattr(blind, name))
    assert blind.genres == ("unknown",) and not blind.item_genre.any() and len(log.genres) == SIZE["genres"]


@pytest.mark.parametrize("key, value", [("drift", "1.5"), ("drift", "-0.1"), ("genre_labels", "maybe")])
def test_world_keys_are_validated_and_exit_2(tmp_path, capsys, key, value):
    with pytest.raises(SystemExit) as exit:
        cli(["run", "recsys", "--set", f"recsys.world.{key}={value}", "--out", str(tmp_path)])
    assert exit.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"recsys.world.{key}" in err[0]
