"""Memory-Shapley skill credit (skills/shapley.py): the values of a hand-worked 3-item game, the sampled estimate,
and an edit pass that prunes a planted harmful skill group-relative credit cannot see."""

import numpy as np
import pytest

from skills import Rollout, SkillsConfig, Trace, to_edit
from skills.loop import EditLoop, World
from skills.shapley import ShapleyConfig, library_utility, retrieve, shapley

# v(S): correctness with the subset S of {a, b, h}; h lowers it in every coalition, most where a is
V = {"": .2, "a": .6, "b": .5, "h": .1, "ab": .8, "ah": .3, "bh": .4, "abh": .5}


def value(s: frozenset) -> float:
    return V["".join(sorted(s))]


def test_the_exact_values_of_a_hand_worked_game():
    # weights: |S| = 0 and 2 -> 1/3, |S| = 1 -> 1/6
    # phi_a = (.6-.2)/3 + (.8-.5)/6 + (.3-.1)/6 + (.5-.4)/3 = .25
    # phi_b = (.5-.2)/3 + (.8-.6)/6 + (.4-.1)/6 + (.5-.3)/3 = .25
    # phi_h = (.1-.2)/3 + (.3-.6)/6 + (.4-.5)/6 + (.5-.8)/3 = -.2
    phi, replays = shapley(["a", "b", "h"], value, ShapleyConfig(exact_upto=3), np.random.default_rng(0))
    assert phi == pytest.approx({"a": .25, "b": .25, "h": -.2})
    assert sum(phi.values()) == pytest.approx(V["abh"] - V[""])  # efficiency
    assert replays == 8


def test_sampled_orders_keep_efficiency_and_approach_the_exact_values():
    rng = np.random.default_rng(1)
    one, _ = shapley(["a", "b", "h"], value, ShapleyConfig(exact_upto=0, samples=1), rng)
    assert sum(one.values()) == pytest.approx(V["abh"] - V[""])  # every single order is efficient
    many, replays = shapley(["a", "b", "h"], value, ShapleyConfig(exact_upto=0, samples=600), rng)
    assert many == pytest.approx({"a": .25, "b": .25, "h": -.2}, abs=0.03)
    assert replays == 8  # each coalition replayed once


def desk(library):
    """20 validation questions; a library subset S solves the first 20 v(S) of them."""
    for name in "abh":
        library.add(name, f"skill {name}", f"line {name}", role="x")

    def evaluate(skills, questions, seeds):
        solved = round(20 * value(frozenset(s.name for s in skills)))
        return (np.arange(len(questions)) < solved).astype(float)

    return World(evaluate, np.arange(20), np.arange(20), write=lambda d, trace, rng: to_edit(d))


def rollouts():
    """Every rollout used all three skills and succeeded: no contrast for group-relative credit to read."""
    def one():
        t = Trace()
        t.invoke("x", agent="x", skills=("a", "b", "h"))
        return Rollout(1.0, t)
    return [(q, [one() for _ in range(4)]) for q in range(4)]


def test_an_edit_pass_prunes_the_planted_skill_that_rides_with_helpful_ones(library):
    world = desk(library)
    loop = EditLoop(library, SkillsConfig(credit="memory_shapley", shapley=ShapleyConfig(exact_upto=3)), world)
    loop.observe(rollouts())
    utility = library_utility(library.current(), world.evaluate, world.questions, world.seeds, ShapleyConfig(),
                              np.random.default_rng(0))
    assert utility.values["h"] == pytest.approx(-.2) and utility.values["a"] > 0 < utility.values["b"]
    # scaled by the pooled spread of the 8 coalitions' 0/1 scores (mean 3.4 / 8): credit -0.2 / 0.494 <= prune_below
    assert utility.scale == pytest.approx(np.sqrt(.425 * .575) + 1e-6)
    done = loop.run(np.random.default_rng(0))
    assert [(d.target, d.action) for d in done.diagnoses] == [("h", "prune")] and done.accepted == 1
    assert sorted(s.name for s in library.current()) == ["a", "b"]


def test_group_relative_credit_blames_nothing_on_the_same_rollouts(library):
    loop = EditLoop(library, SkillsConfig(credit="grse"), desk(library))
    loop.observe(rollouts())
    assert loop.run(np.random.default_rng(0)).diagnoses == []


def test_retrieval_ranks_lines_by_similarity_plus_utility():
    lines = {"toaster": "example: my toaster broke, order 3307 => order 3307",
             "fan": "example: my fan broke, order 4410 => order 4411",
             "rule": "Reply only with the order number."}
    read = "my toaster broke, order 5120"
    # word overlap (Jaccard) with the read: toaster 4/7, fan 3/9, rule 1/10
    assert retrieve(read, lines, {}, 2, 1.0) == ["toaster", "fan"]
    # the planted fan line's negative utility (-0.4) drops it below the rule (0.33 - 0.4 < 0.1)
    assert retrieve(read, lines, {"fan": -0.4}, 2, 1.0) == ["toaster", "rule"]
    assert retrieve(read, lines, {"fan": -0.4}, 2, 0.0) == ["toaster", "fan"]  # weight 0: similarity alone
    assert retrieve(read, lines, {}, 0, 1.0) == list(lines)  # 0: every line
