"""The tuned baselines (chosen on validation users, exact by their formulas, composable as operators, the library
that starts from the best of them), the planted harm that hurts on any data, and data without genres."""

from itertools import combinations
from types import SimpleNamespace

import numpy as np
import pytest

from scenarios.cli.main import main as cli
from scenarios.recsys import baselines, edits, ops, seeds, sparse, tuned
from scenarios.recsys.data import TEST, VALIDATION, Split
from scenarios.recsys.pipeline import VIOLATED, Compiled, Pipeline
from scenarios.recsys.ranking import ndcg, top_k
from scenarios.run.config import load
from scenarios.run.runner import run_experiment
from skills import Diagnosis
from tests.scenarios.recsys_small import FIXTURE, OVERRIDES, small_world


def test_each_tuned_baseline_keeps_the_grid_value_best_on_validation():
    w = small_world()
    t, users = w.signals.tuned, w.data.users(VALIDATION)
    for name in tuned.TUNED:
        for key, value in t.params[name].items():
            assert value in tuned.GRIDS[name][key]
        recs = baselines.recommend(name, w.data, w.signals, users)
        assert ndcg(recs, w.data.targets[users]).mean() == pytest.approx(t.validation[name])  # what was compared
    assert t.validation[t.best] == max(t.validation.values())
    days = {}
    for d in tuned.GRIDS["trending"]["days"]:
        s = tuned._window_counts(t.events, t.span, w.data.now[users], d, w.data.n_items) + 1e-9 * w.signals.popularity
        days[d] = ndcg(top_k(w.data.strike(s, users), 10), w.data.targets[users]).mean()
    assert t.params["trending"]["days"] == max(days, key=days.get)  # the argmax of the grid, first on ties


def test_ease_is_the_closed_form_with_a_zero_diagonal():
    w = small_world()
    X = w.data.train[:, w.signals.tuned.ease_items].toarray().astype(np.float64)
    G, lam = X.T @ X, 30.0
    B = tuned._ease(G, lam).astype(np.float64)
    assert np.abs(np.diag(B)).max() == 0
    off = ~np.eye(G.shape[0], dtype=bool)  # stationarity of ||X - XB||^2 + lam ||B||^2 off the diagonal
    np.testing.assert_allclose(((G + lam * np.eye(G.shape[0])) @ B - G)[off], 0.0, atol=1e-3 * np.abs(G).max())


def test_trending_counts_the_train_events_just_before_the_request():
    w = small_world()
    d, t = w.data, w.signals.tuned
    users = d.users(TEST)[:5]
    counts = tuned._window_counts(t.events, t.span, d.now[users], 30.0, d.n_items)
    ptr, item, time = sparse.train_sequences(d)
    for row, u in enumerate(users):
        inside = (time >= d.now[u] - 30.0) & (time < d.now[u])
        np.testing.assert_array_equal(counts[row], np.bincount(item[inside], minlength=d.n_items))


def test_transitions_are_the_next_item_frequencies():
    w = small_world()
    T = w.signals.tuned.transitions.toarray()
    ptr, item, _ = sparse.train_sequences(w.data)
    u = 3
    seq = item[ptr[u]:ptr[u + 1]]
    assert all(T[a, b] > 0 for a, b in zip(seq[:-1], seq[1:]))
    rows = T.sum(1)
    np.testing.assert_allclose(rows[rows > 0], 1.0, rtol=1e-5)


@pytest.mark.parametrize("name", tuned.TUNED)
def test_the_library_of_a_baseline_recommends_what_the_baseline_does(name):
    w = small_world()
    users = w.data.users(TEST)
    lib = Compiled.of([SimpleNamespace(name=n, role=r, rule=rule) for n, r, _, rule in seeds.best_baseline(name)])
    piped = w.pipeline.run(lib, users).final
    direct = baselines.recommend(name, w.data, w.signals, users)
    raw = w.signals.tuned.score(name, w.data, users)
    full = (np.take_along_axis(raw, np.maximum(direct, 0), axis=1) > 0).all(1)  # k items the recall can propose
    assert full.mean() > 0.5
    assert (piped[full] == direct[full]).all(1).mean() > 0.95  # z-scoring may swap near-ties


def test_an_added_skill_draws_the_tuned_operators_only_with_the_full_catalogue():
    d = Diagnosis("rank-agent", "rank-mf", "missing_skill", None, "add", "rank", None, "")
    for catalogue in ("classic", "full"):
        drawn = {edits.add(d, {}, np.random.default_rng(i), ops.addable(catalogue)["rank"]).rule.split(" -> ")[1]
                 .split("(")[0] for i in range(200)}
        assert (drawn & set(tuned.TUNED)) == (set(tuned.TUNED) if catalogue == "full" else set())
    assert [op for op in ops.CATALOGUE["recall"] if op not in tuned.TUNED and op not in ops.LEARNED["recall"]] \
        == list(ops.addable("classic")["recall"])  # a learned source is the run's to train, never an edit's to add


def test_a_run_can_start_from_the_best_baseline(tmp_path):
    summary = run_experiment(load("recsys", OVERRIDES + ["recsys.start=best_baseline", "run.episodes=64"], seed=0),
                             f"sqlite:///{tmp_path / 'runs.db'}", progress=False)
    best = summary["baseline_best"].replace("_", "-")
    assert sorted(summary["skills_final"]) == [f"rank-{best}@1", f"recall-{best}@1"]  # nothing to blame: no edit
    assert set(summary["baselines"]) == set(summary["baselines_recall50"]) == set(baselines.BASELINES)
    assert summary["ndcg10_initial"] == pytest.approx(summary["baselines"][summary["baseline_best"]], abs=0.02)
    assert summary["baselines_tuned"][summary["baseline_best"]]["validation_ndcg"] == max(
        v["validation_ndcg"] for v in summary["baselines_tuned"].values())


@pytest.mark.parametrize("sets, message", [
    (["recsys.start=best_baseline", "recsys.seed_library=/tmp"], "would leave recsys.seed_library out"),
    (["recsys.start=best"], "recsys.start"),
    (["recsys.catalogue=all"], "recsys.catalogue"),
])
def test_start_and_catalogue_errors_are_one_line_and_exit_2(tmp_path, capsys, sets, message):
    with pytest.raises(SystemExit) as exit:
        cli(["run", "recsys", *(a for s in sets for a in ("--set", s)), "--out", str(tmp_path)])
    assert exit.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


# ------------------------------------------------------------------ harm that is harm on any data
def test_the_any_data_harm_hurts_by_construction_for_its_segment_whatever_else_is_planted():
    """Pruning any one planted skill must help on its own, with or without the others (else a gate that takes
    one edit at a time may rightly refuse each prune): every subset, for two starting libraries."""
    w = small_world()
    users = w.data.users(VALIDATION)
    harmful = seeds.harmful("any_data", w.pipeline.features, seeds.easiness(w, users))
    assert "{" not in "".join(rule for *_, rule in harmful) and [n for n, *_ in harmful] == seeds.planted(3, "any_data")
    skill = {name: SimpleNamespace(name=name, role=role, rule=rule) for name, role, _, rule in harmful}
    for start in (seeds.INITIAL, seeds.start("initial+best_baseline", w.signals.tuned.best, w.pipeline, users)):
        base = [SimpleNamespace(name=n, role=r, rule=rule) for n, r, _, rule in start]
        for name in skill:
            rest = [o for o in skill if o != name]
            for others in (c for k in range(len(rest) + 1) for c in combinations(rest, k)):
                without = Compiled.of(base + [skill[o] for o in others])
                lib = Compiled.of(base + [skill[o] for o in others] + [skill[name]])
                fires = w.pipeline.applicable(lib, users)[:, -1]
                assert 0.2 < fires.mean() < 0.8  # a median cut: about half of the requests
                before, after = w.pipeline.run(without, users).ndcg, w.pipeline.run(lib, users).ndcg
                assert (after[~fires] == before[~fires]).all(), (name, others)
                assert after[fires].mean() < before[fires].mean(), (name, others)
    pinned = w.pipeline.run(Compiled.of(base + [SimpleNamespace(name="p", role="rerank",
                                                                rule="always -> pin_consumed(n=2)")]), users)
    history = w.data.history_matrix(users)
    assert history[np.arange(users.size)[:, None], pinned.final[:, :2]].toarray().all()  # consumed: never a target
    noise = Compiled.of([SimpleNamespace(name="n", role="rank", rule="always -> noise(weight=1)"), *base[:1]])
    first, again = w.pipeline.run(noise, users), w.pipeline.run(noise, users)
    assert (first.final == again.final).all()  # a draw fixed by the ids: every rollout of a request alike


def test_without_genre_data_the_genre_parts_say_they_are_inactive(tmp_path):
    (tmp_path / "ml").mkdir()
    (tmp_path / "ml" / "u.data").write_bytes((FIXTURE / "ml-100k" / "u.data").read_bytes())  # no u.item beside it
    small = ["recsys.holdout=2", "recsys.validation_users=15", "recsys.test_users=15", "recsys.rank=8",
             "recsys.candidates=30", "market.batch=40", "run.episodes=40"]
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    bare = run_experiment(load("recsys", small + ["recsys.data=movielens", f"recsys.path={tmp_path / 'ml'}"], seed=0),
                          db, progress=False)
    assert bare["inactive"] == list(ops.GENRE_BASED)
    genres = run_experiment(load("recsys", small + ["recsys.data=movielens", f"recsys.path={FIXTURE / 'ml-100k'}"],
                                 seed=0), db, progress=False)
    assert "inactive" not in genres
    w = small_world()
    one = dict(vars(w.data), item_genre=np.zeros(w.data.n_items, dtype=np.int64), n_genres=1)
    pipe = Pipeline(Split(**one), w.signals, w.pipeline.cfg)
    out = pipe.run(Compiled.of([SimpleNamespace(name=n, role=r, rule=rule) for n, r, _, rule in seeds.INITIAL]),
                   w.data.users(VALIDATION))
    assert not (out.status[:, 2] == VIOLATED).any()  # one genre everywhere is no diversity failure
