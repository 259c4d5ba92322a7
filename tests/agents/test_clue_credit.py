"""The clue-chain credit estimators on a hand-worked group: ``sid_span`` (agents/credit/sid_span.py) gives a success's
advantage only to the queries that hit (and the steps that are no query), a failure keeps grpo's on every step;
``abseeker`` (agents/credit/abseeker.py) adds each step's discounted rubric score, centred."""

import numpy as np
import pytest

from agents import credit as C
from agents.credit.base import Trajectory

R = 1 / (1 + 2e-6)  # grpo's advantage of outcomes [1, 0]


def traj(outcome, hit):
    T = len(hit)
    return Trajectory(outcome=outcome, agent=np.arange(T), action=np.zeros(T, dtype=int), hit=np.array(hit))


def test_a_success_credits_only_the_queries_that_hit():
    S = traj(1, [1, 0, -1])  # a query that found a clue, a planted one that missed, the answer
    F = traj(0, [0, -1])
    got = C.make("sid_span")([S, F]).steps
    np.testing.assert_allclose(got[0], [R, 0.0, R])
    np.testing.assert_allclose(got[1], [-R, -R])
    assert C.make("grpo")([S, F]).steps[0][1] == pytest.approx(R)  # grpo credits the missed query too


def test_it_needs_the_hit_signal_and_a_world_without_it_is_refused():
    from scenarios.run.config import ConfigError, load

    assert C.needs("sid_span") == frozenset({"outcome", "hit"})
    with pytest.raises(ConfigError, match="sid_span.*hit"):
        load("wordmath", ['agents.actions="grpo"', "agents.credit=sid_span"])
    assert load("multihop", ['agents.actions="grpo"', "agents.credit=sid_span"]).agents.credit == "sid_span"


def test_abseeker_scores_queries_by_the_rubric_with_a_discounted_step_advantage():
    S = traj(1, [1, 0, -1])
    F = traj(0, [0, -1])
    # s(S) = [.8, -.8, 0], s(F) = [-.8, 0]; v(S) = [.8 + .25 (-.8), -.8, 0] = [.6, -.8, 0], v(F) = [-.8, 0]
    # centre = (.6 - .8 - .8) / 5 = -.2
    got = C.make("abseeker")([S, F]).steps
    np.testing.assert_allclose(got[0], [R + .8, R - .6, R + .2])
    np.testing.assert_allclose(got[1], [-R - .6, -R + .2])
    assert got[0][1] < got[0][0]  # the planted missed query: below the query that found the clue
    flat = C.make("abseeker", gamma=0.0)([S, F]).steps[0]  # gamma 0: each step its own score, centre -.8 / 5
    np.testing.assert_allclose(flat, [R + .96, R - .64, R + .16])
    assert C.needs("abseeker") == frozenset({"outcome", "hit"})
