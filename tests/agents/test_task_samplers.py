"""The task samplers: what rods keeps, retires and synthesises; what scrl mixes and how it normalises;
every sampler's state round trip."""

import numpy as np
import pytest

from agents import tasks as S
from agents.credit.advantages import EPS, class_advantage


def rng(seed=0):
    return np.random.default_rng(seed)


# ------------------------------------------------------------------------------------------- rods
def test_rods_draws_only_from_its_buffer():
    s = S.make("rods", list("abcd"), capacity=2)
    assert set(s.sample(rng(), 200)) == {"a", "b"}
    assert s.buffer == ["a", "b"] and s.pool == ["c", "d"]


def test_rods_retires_mastered_and_hopeless_tasks_and_refills():
    s = S.make("rods", list("abcd"), capacity=2, min_tries=4, hopeless=8)
    s.sample(rng(), 1)
    s.update(["a"] * 3, [1.0] * 3)
    assert "a" in s.buffer  # 3 < min_tries: not judged yet
    s.update(["a", "b"] + ["b"] * 6, [0.9] + [0.0] * 7)  # a: mean 0.975 after 4; b: 7 zeros
    assert s.retired == {"a": "mastered"} and "b" in s.buffer
    assert s.score("b") == 0.25  # no variance yet, but not judged: still drawn until it is
    s.update(["b"], [0.0])  # the 8th zero
    assert s.retired == {"a": "mastered", "b": "hopeless"}
    s.sample(rng(), 1)
    assert s.buffer == ["c", "d"] and s.pool == []
    s.update(["c"] * 8, [0.0] * 7 + [1.0])  # it scored once: hard, not hopeless (variance 7/64: not flat)
    assert "c" not in s.retired


def test_rods_keeps_high_variance_tasks_and_samples_in_proportion():
    s = S.make("rods", list("cdef"), capacity=3, min_tries=4)
    s.sample(rng(), 1)
    s.update(list("cccc"), [0.0, 1.0, 0.0, 1.0])  # variance 1/4
    s.update(list("dddd"), [0.3, 0.7, 0.3, 0.7])  # variance 0.04
    s.update(list("eeee"), [0.5] * 4)  # no variance: its groups carry no advantage
    assert s.retired == {"e": "flat"}
    draws = s.sample(rng(1), 20_000)
    assert s.buffer == ["c", "d", "f"]  # f, untried, takes e's place at the prior 1/4
    for task, weight in (("c", 0.25), ("d", 0.04), ("f", 0.25)):
        assert draws.count(task) / len(draws) == pytest.approx(weight / 0.54, abs=0.01)


def test_rods_synthesises_variants_of_the_most_informative_task_once_the_pool_is_dry():
    prime = lambda task, rng: task + "'"  # noqa: E731
    s = S.make("rods", ["x", "y"], capacity=3, variant=prime, min_tries=4)
    s.sample(rng(), 1)
    assert s.buffer == ["x", "y", "x'"]  # both untried (the prior): the first
    s.update(list("xxxx"), [0.3, 0.7, 0.3, 0.7])
    s.update(list("yyyy"), [0.0, 1.0, 0.0, 1.0])
    s.update(["x'"] * 4, [1.0] * 4)
    assert s.retired == {"x'": "mastered"}
    s.sample(rng(), 1)
    assert s.buffer == ["x", "y", "y'"]  # y varies most
    same = S.make("rods", ["x", "y"], capacity=3, variant=lambda task, rng: task)
    same.sample(rng(), 1)
    assert same.buffer == ["x", "y"]  # a variant that is not new ends the refill
    alone = S.make("rods", ["x"], capacity=1, min_tries=2)
    alone.update(["x", "x"], [1.0, 1.0])
    with pytest.raises(RuntimeError, match="every task is retired"):
        alone.sample(rng(), 1)


def test_rods_state_round_trip():
    s = S.make("rods", list("abcdef"), capacity=3, variant=lambda t, rng: t + "'")
    s.sample(rng(), 4)
    s.update(list("aaaabbbb"), [1, 1, 1, 1, 0, 1, 0, 0.5])
    state = s.state_dict()
    t = S.make("rods", list("abcdef"), capacity=3, variant=lambda t, rng: t + "'")
    t.load_state_dict(state)
    assert t.state_dict() == state
    assert t.sample(rng(5), 30) == s.sample(rng(5), 30)
    s.update(["b"], [1.0])
    t.update(["b"], [0.0])
    assert state["stats"]["b"] == [4, 1.5, 1.25]  # copies both ways, not shared lists


# ------------------------------------------------------------------------------------------- scrl
LADDERS = {"T1": ["T1.a", "T1.b"], "T2": ["T2.a"]}


def curriculum(**settings):
    calls = []

    def subproblems(task):
        calls.append(task)
        return LADDERS[task]

    return S.make("scrl", ["T1", "T2"], subproblems=subproblems, **settings), calls


def test_scrl_draws_half_curriculum_half_original():
    s, calls = curriculum()
    draw = s.sample(rng(), 10)
    assert set(draw[:5]) <= {"T1.a", "T2.a"} and set(draw[5:]) <= {"T1", "T2"}
    draw = s.sample(rng(3), 7)  # odd: the originals get the extra one
    assert set(draw[:3]) <= {"T1.a", "T2.a"} and set(draw[3:]) <= {"T1", "T2"}
    s.sample(rng(4), 50)
    assert sorted(calls) == ["T1", "T2"]  # each task's sub-problems asked for once


def test_scrl_climbs_its_ladder_when_a_rung_is_passed():
    s, _ = curriculum(min_tries=2, advance=0.8)
    assert s.current("T1") == "T1.a"
    s.update(["T1.a", "T1.a"], [1.0, 1.0])
    assert s.current("T1") == "T1.b" and s.current("T2") == "T2.a"
    s.update(["T1.b"] * 4, [1.0, 0.0, 1.0, 1.0])  # mean 0.75 < 0.8
    assert s.current("T1") == "T1.b"
    s.update(["T1.b"], [1.0])  # 4 / 5 = 0.8
    assert s.current("T1") == "T1"  # the top rung is the task itself
    s.update(["T1"] * 4, [1.0] * 4)
    assert s.current("T1") == "T1" and s.level["T1"] == 2


def test_scrl_normalises_per_subproblem():
    eps = EPS
    got = class_advantage(["a", "b", "a", "b", "c"], [1.0, 0.5, 0.0, 0.5, 1.0])
    np.testing.assert_allclose(got, [0.5 / (0.5 + eps), 0.0, -0.5 / (0.5 + eps), 0.0, 0.0], atol=1e-12)
    got = class_advantage([("x", 1), ("x", 1), ("x", 2), ("x", 2)], [1.0, 0.0, 0.2, 0.0])  # tuples as specs
    np.testing.assert_allclose(got, [0.5 / (0.5 + eps), -0.5 / (0.5 + eps), 0.1 / (0.1 + eps), -0.1 / (0.1 + eps)],
                               atol=1e-9)


def test_scrl_state_round_trip():
    s, _ = curriculum(min_tries=2)
    s.sample(rng(), 10)
    assert [s.current("T1"), s.current("T2")] == ["T1.a", "T2.a"]  # both ladders built before the checkpoint
    s.update(["T1.a", "T1.a", "T2.a"], [1.0, 1.0, 0.0])
    state = s.state_dict()

    def refuse(task):
        raise AssertionError("the ladders come from the checkpoint")

    t = S.make("scrl", ["T1", "T2"], subproblems=refuse, min_tries=2)
    t.load_state_dict(state)
    assert t.state_dict() == state and t.current("T1") == "T1.b"
    assert t.sample(rng(9), 12) == s.sample(rng(9), 12)
    t.update(["T2.a", "T2.a"], [1.0, 1.0])  # T2.a: 2 of 3 tries passed, 2/3 < 0.8: it stays
    assert t.current("T2") == "T2.a"
    t.update(["T2.a"] * 3, [1.0] * 3)  # 5 / 6
    assert t.current("T2") == "T2"


# ------------------------------------------------------------------------------------------ registry
def test_registry_and_uniform():
    assert S.NAMES == ("uniform", "rods", "scrl")
    u = S.make("uniform", ["p", "q"])
    assert set(u.sample(rng(), 100)) == {"p", "q"}
    u.update(["p"], [1.0])
    assert u.state_dict() == {}
    with pytest.raises(KeyError, match="unknown task sampler"):
        S.make("curriculum", ["p"])
