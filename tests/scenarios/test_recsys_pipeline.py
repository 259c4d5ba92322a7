"""The recsys workflow: the skill rule format, the operators, the per-role checks, and the classic baselines."""

from types import SimpleNamespace

import numpy as np
import pytest

from agents.rules import RuleSyntaxError
from scenarios.recsys import baselines, rules, seeds
from scenarios.recsys.data import TEST, VALIDATION
from scenarios.recsys.pipeline import EMPTY, OK, VIOLATED, Compiled, trace
from tests.scenarios.recsys_small import small_world


def skill(name, role, rule):
    return SimpleNamespace(name=name, role=role, rule=rule, label=f"{name}@1")


def initial():
    return [skill(n, r, rule) for n, r, _, rule in seeds.INITIAL]


# ------------------------------------------------------------------ the rule format
def test_rule_text_round_trips_with_defaults_filled_in():
    clauses = rules.parse("history >= 20 and novelty < 50 -> covis(seeds=3)\nalways -> popular()", "recall")
    assert [c.operator for c in clauses] == ["covis", "popular"]
    assert clauses[0].param("seeds") == 3 and clauses[0].param("weight") == 1.0  # the default weight
    assert rules.parse(rules.render(clauses), "recall") == clauses
    assert rules.render(clauses) == ("history >= 20 and novelty < 50 -> covis(seeds=3, weight=1)\n"
                                     "always -> popular(weight=0.2)")
    body = rules.body(clauses, "recall")
    assert "last 3 items" in body and "history length >= 20" in body and body.count("\n") == 2


@pytest.mark.parametrize("rule, role, problem", [
    ("always -> mf()", "recall", "not a recall operator"),
    ("always -> covis(seeds=0)", "recall", "outside"),
    ("always -> covis(depth=2)", "recall", "cannot read parameter"),
    ("sometimes -> covis()", "recall", "cannot read term"),
    ("always covis()", "recall", "expected CONDITION"),
    ("", "rank", "no clause"),
])
def test_bad_rules_name_the_clause_and_the_problem(rule, role, problem):
    with pytest.raises(RuleSyntaxError, match=problem):
        rules.parse(rule, role)


def test_mutation_changes_one_thing_and_stays_in_range():
    rng = np.random.default_rng(0)
    clauses = rules.parse("novelty >= 30 -> boost_new(n=2, days=30)", "rerank")
    for _ in range(50):
        changed = rules.mutate(clauses, "rerank", rng)
        assert changed != clauses
        rules.parse(rules.render(changed), "rerank")  # still a valid rule
        a, b = clauses[0], changed[0]
        assert (a.condition != b.condition) + sum(x != y for x, y in zip(a.params, b.params)) == 1


# ------------------------------------------------------------------ operators and checks
def test_the_initial_library_recommends_unseen_items_and_beats_chance():
    w = small_world()
    users = w.data.users(VALIDATION)
    out = w.pipeline.run(Compiled.of(initial()), users)
    assert out.final.shape == (users.size, 10) and (out.final >= 0).all()
    history = w.data.history_matrix(users)
    rows = np.arange(users.size)[:, None]
    assert not history[rows, out.final].toarray().any()  # never recommends history ...
    assert w.data.released(users)[rows, out.final].all()  # ... nor an item released after the request
    assert (w.data.released(users) == (w.data.item_release[None, :] <= w.data.now[users, None])).all()
    assert out.ndcg.mean() > 5 * 10 / w.data.n_items * 0.3  # well above a random list
    assert (out.status == OK).mean() > 0.8
    assert np.array_equal(w.pipeline.evaluate(Compiled.of(initial()), users), out.ndcg)  # deterministic


def test_rerank_operators_do_what_their_sentence_says():
    w = small_world()
    users = w.data.users(VALIDATION)[:60]
    base = [skill("recall-covis", "recall", "always -> covis(seeds=5)"), skill("rank-mf", "rank", "always -> mf()")]
    plain = w.pipeline.run(Compiled.of(base), users)
    capped = w.pipeline.run(Compiled.of(base + [skill("rerank-cap", "rerank", "always -> diversify(cap=1)")]), users)
    for top, whole in zip(capped.final, capped.ranked):  # one per genre first, as far as the list has genres
        available = np.unique(w.data.item_genre[whole[whole >= 0]]).size
        assert np.unique(w.data.item_genre[top]).size == min(10, available)
    assert set(capped.final[0]) <= set(plain.ranked[0])  # a reordering of the same list
    pinned = w.pipeline.run(Compiled.of(base + [skill("rerank-pin", "rerank", "always -> pin_sponsored(n=2)")]), users)
    assert w.data.sponsored[pinned.final[:, :2]].all()
    np.testing.assert_array_equal(pinned.final[:, 2:], np.array(
        [[i for i in row if i not in top][:8] for row, top in zip(plain.ranked, pinned.final[:, :2])]))
    fresh = w.pipeline.run(Compiled.of(base + [skill("rerank-new", "rerank", "always -> boost_new(n=1, days=5000)")]),
                           users)
    np.testing.assert_array_equal(fresh.final, plain.final)  # everything is "new": order unchanged


def test_per_role_checks_fail_the_right_nodes():
    w = small_world()
    users = w.data.users(VALIDATION)[:40]
    lib = Compiled.of([skill("rank-mf", "rank", "always -> mf()"),
                       skill("rerank-pin", "rerank", "always -> pin_sponsored(n=10)")])
    out = w.pipeline.run(lib, users)
    assert (out.status[:, 0] == EMPTY).all()  # no recall skill: no candidate
    assert (out.status[:, 1] == VIOLATED).all()  # rank got nothing: fewer than k items
    lib = Compiled.of([skill("recall-covis", "recall", "always -> covis()"), *(
        [skill("rerank-pin", "rerank", "always -> pin_sponsored(n=10)")])])
    out = w.pipeline.run(lib, users)
    assert (out.status[:, 1] == EMPTY).all()  # no rank skill ran
    distinct = np.array([np.unique(w.data.item_genre[row]).size for row in out.final])
    np.testing.assert_array_equal(out.status[:, 2] == VIOLATED, distinct < 2)  # the diversity floor
    one_genre = Compiled.of([skill("recall-covis", "recall", "always -> covis()"),
                             skill("rank-genre", "rank", "always -> genre(seeds=1, weight=16)"),
                             skill("rerank-cap", "rerank", "always -> diversify(cap=10)")])
    narrow = w.pipeline.run(one_genre, users)
    distinct = np.array([np.unique(w.data.item_genre[row]).size for row in narrow.final])
    assert (distinct < 2).any()  # the check has something to catch ...
    np.testing.assert_array_equal(narrow.status[:, 2] == VIOLATED, distinct < 2)  # ... and catches exactly that
    t = trace(out, lib, 0, {"recall": "a", "rank": "b", "rerank": "c"})
    assert [t.node(i)["role"] for i in range(3)] == ["recall", "rank", "rerank"]
    assert t.node(1)["status"] == "empty_output" and t.failed_upstream(2) == [1] + ([0] if out.status[0, 0] else [])


def test_conditions_and_stochastic_use():
    w = small_world()
    users = w.data.users(VALIDATION)
    lib = Compiled.of([skill("recall-covis", "recall", "always -> covis()"),
                       skill("rank-heavy", "rank", "history >= 30 -> popularity()")])
    applies = w.pipeline.applicable(lib, users)
    assert applies[:, 0].all()
    np.testing.assert_array_equal(applies[:, 1], w.pipeline.features[users, 0] >= 30)
    used = w.pipeline.sample_use(lib, np.repeat(users, 4), 0.5, np.random.default_rng(0))
    assert 0.4 < used[:, 0].mean() < 0.6 and not (used & ~np.repeat(applies, 4, axis=0)).any()


def test_classic_baselines_on_the_same_split():
    w = small_world()
    users = w.data.users(TEST)
    pop = baselines.recommend("popularity", w.data, w.signals, users, k=5)
    order = np.argsort(-w.signals.popularity, kind="stable")
    seen = w.data.history_matrix(users[:1]).indices
    exists = w.data.item_release <= w.data.now[users[0]]
    assert pop[0].tolist() == [i for i in order if i not in seen and exists[i]][:5]
    for name in ("itemknn", "mf"):
        recs = baselines.recommend(name, w.data, w.signals, users, k=10)
        assert recs.shape == (users.size, 10) and (recs >= 0).all()
        assert w.data.released(users)[np.arange(users.size)[:, None], recs].all()
    with pytest.raises(ValueError, match="unknown baseline"):
        baselines.scores("oracle", w.data, w.signals, users)
