"""recsys data: the synthetic generator, the per-user time-ordered split, the MovieLens loader and its fixture."""

import filecmp

import numpy as np
import pytest

from scenarios.recsys import fixture, movielens
from scenarios.recsys.data import QUESTION, TEST, VALIDATION, split
from scenarios.recsys.synthetic import WorldConfig, generate
from tests.scenarios.recsys_small import FIXTURE

CFG = WorldConfig(users=300, items=120, genres=5, dim=8, mean_history=25)


def test_generator_is_deterministic_and_shaped():
    log, truth = generate(CFG, seed=3)
    again, _ = generate(CFG, seed=3)
    other, _ = generate(CFG, seed=4)
    for name in ("user", "item", "time"):
        np.testing.assert_array_equal(getattr(log, name), getattr(again, name))
    assert not np.array_equal(log.item[:200], other.item[:200])
    assert (log.n_users, log.n_items) == (300, 120) and log.item_genre.shape == (120,)
    assert set(np.unique(log.user)) == set(range(300))  # every user has a history
    assert log.item.min() >= 0 and log.item.max() < 120 and set(log.item_genre) <= set(range(5))
    counts = np.bincount(log.user)
    assert counts.min() >= CFG.min_events and counts.max() <= CFG.items // 2
    assert abs(counts.mean() - CFG.mean_history) < 5
    pairs = log.user * CFG.items + log.item
    assert np.unique(pairs).size == pairs.size  # an item at most once per user
    assert (log.time >= log.item_release[log.item] - 1e-9).all()  # nobody consumes an item before its release
    assert truth.item_vector.shape == (120, 8) and truth.user_taste.shape == (300, CFG.phases, 8)
    np.testing.assert_allclose(np.linalg.norm(truth.item_vector, axis=1), 1.0)


def test_split_holds_out_each_users_last_items_and_deals_disjoint_groups():
    log, _ = generate(CFG, seed=1)
    d = split(log, holdout=3, min_train=5, validation_users=40, test_users=50, sponsored_share=0.05, seed=1)
    assert (np.bincount(d.group) == [d.n_users - 90, 40, 50]).all()
    assert d.sponsored.sum() == 6
    for u in range(0, d.n_users, 7):
        raw = d.user_ids[u]
        mine = np.flatnonzero(log.user == raw)
        order = mine[np.lexsort((log.item[mine], log.time[mine]))]
        items = log.item[order]
        test, val, train = items[-3:], items[-6:-3], items[:-6]
        targets = test if d.group[u] == TEST else val
        np.testing.assert_array_equal(d.targets[u], targets)
        times = log.time[order]
        assert d.request_time[u] == (times[-3] if d.group[u] == TEST else times[-6])  # asked at the first target
        assert d.request_time[u] >= d.hist_time[d.hist_ptr[u + 1] - 1]  # after all of its history
        history = d.hist_item[d.hist_ptr[u]:d.hist_ptr[u + 1]]
        np.testing.assert_array_equal(history, np.r_[train, val] if d.group[u] == TEST else train)
        assert set(d.train[u].indices) == set(train)  # the fitted signals never see a held-out item
        assert not set(history) & set(targets)
    assert d.users(QUESTION).size + d.users(VALIDATION).size + d.users(TEST).size == d.n_users


def test_users_with_too_few_interactions_are_dropped():
    log, _ = generate(CFG, seed=0)
    counts = np.bincount(log.user)
    d = split(log, holdout=5, min_train=counts.min(), validation_users=10, test_users=10, sponsored_share=0.1, seed=0)
    assert d.n_users == (counts >= 10 + counts.min()).sum()
    with pytest.raises(ValueError, match="interactions or more"):
        split(log, holdout=100, min_train=1, validation_users=1, test_users=1, sponsored_share=0.1, seed=0)


def test_loader_reads_both_movielens_formats_of_the_shipped_fixture():
    a = movielens.load(FIXTURE / "ml-100k" / "u.data")
    b = movielens.load(FIXTURE / "ml-latest-small")  # a folder: finds ratings.csv
    user, item, stars, stamp, genre = fixture.ratings()
    assert a.user.size == b.user.size == user.size == 1174
    for x in (a, b):
        np.testing.assert_array_equal(x.user, user - 1)  # 1-based ids, renumbered in order
        np.testing.assert_array_equal(np.unique(item) [x.item], item)
        np.testing.assert_allclose(x.time, (stamp - stamp.min()) / 86_400.0)
        assert x.n_users == 60 and x.n_items == np.unique(item).size
        assert x.genres[x.item_genre[0]] == movielens.ML100K_GENRES[genre[np.unique(item)[0] - 1] + 1]
    np.testing.assert_array_equal(a.item_genre, b.item_genre)
    liked = movielens.load(FIXTURE / "ml-100k", min_rating=4)
    assert liked.user.size == (stars >= 4).sum()


def test_loader_errors_name_the_path(tmp_path):
    with pytest.raises(movielens.MovieLensError, match="no such file"):
        movielens.load(tmp_path / "missing.csv")
    with pytest.raises(movielens.MovieLensError, match="no u.data or ratings.csv"):
        movielens.load(tmp_path)
    (tmp_path / "u.data").write_text("1\t2\t3\n")
    with pytest.raises(movielens.MovieLensError, match="4 columns"):
        movielens.load(tmp_path / "u.data")


def test_the_fixture_script_writes_the_committed_files(tmp_path):
    written = fixture.write(tmp_path)
    for path in written:
        committed = FIXTURE / path.relative_to(tmp_path)
        assert filecmp.cmp(path, committed, shallow=False), f"{committed} differs from what fixture.py writes"
