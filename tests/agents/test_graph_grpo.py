"""``graph_grpo`` (agents/credit/graph_grpo.py) on a hand-worked group: the outcome flows back along the read edges,
each passing on its kind's fitted share, and a detour nothing checked depends on gets no credit."""

import numpy as np
import pytest

from agents import credit as C
from agents.credit.base import Trajectory

R = 1 / (1 + 2e-6)  # grpo's advantage of outcomes [1, 0]


def traj(outcome, deps):
    T = len(deps)
    return Trajectory(outcome=outcome, agent=np.arange(T), action=np.zeros(T, dtype=int), role=["a", "b", "c"][:T],
                      deps=deps)


# success: a writes, b reads a, c reads b (checked). failure: b ignored a's output (a is a detour), c reads b
S, F = traj(1, [(), (0,), (1,)]), traj(0, [(), (), (1,)])


def test_the_outcome_flows_back_by_fitted_edge_shares():
    # edge kinds in the checked closures: S {a->b: 1, b->c: 1}, F {a->b: 0, b->c: 1}; centred [[.5, 0], [-.5, 0]]
    # ridge fit on A = [R, -R]: c_ab = (.5 R + .5 R) / (.5 + ridge), c_bc = 0 (no contrast: the prior stays)
    # ridge 3: alpha_ab = .5 + R / 3.5, alpha_bc = .5;  w(S) = [alpha_ab * .5, .5, 1], w(F) = [0, .5, 1]
    alpha_ab = 0.5 + R / 3.5
    got = C.make("graph_grpo", ridge=3.0)([S, F]).steps
    np.testing.assert_allclose(got[0], R * np.array([alpha_ab * 0.5, 0.5, 1.0]), rtol=1e-9)
    np.testing.assert_allclose(got[1], -R * np.array([0.0, 0.5, 1.0]), rtol=1e-9)
    # ridge 1: alpha_ab = .5 + 2R/3 is capped at 1
    np.testing.assert_allclose(C.make("graph_grpo")([S, F]).steps[0], R * np.array([0.5, 0.5, 1.0]), rtol=1e-9)


def test_the_planted_detour_is_not_blamed_where_grpo_and_depgpo_differ():
    graph, grpo = C.make("graph_grpo")([S, F]).steps, C.make("grpo")([S, F]).steps
    assert graph[1][0] == 0 and grpo[1][0] == pytest.approx(-R)  # the failure's unread step: no blame
    depgpo = C.make("depgpo")([S, F]).steps
    assert graph[0][0] < depgpo[0][0] == pytest.approx(R)  # a step two reads away gets a share, not all of it
    assert C.make("graph_grpo", prior=1.0)([S, F]).steps[0] == pytest.approx(depgpo[0])  # alpha = 1: depgpo


def test_it_needs_dependencies_and_a_world_without_them_is_refused():
    from scenarios.run.config import ConfigError, load

    assert C.needs("graph_grpo") == frozenset({"outcome", "deps"})
    with pytest.raises(ConfigError, match="graph_grpo.*deps"):
        load("wordmath", ['agents.actions="grpo"', "agents.credit=graph_grpo"])
    assert load("relay", ['agents.actions="grpo"', "market.batch=8", "agents.credit=graph_grpo",
                          "agents.credit_settings.graph_grpo.prior=0.25"]).agents.credit_settings.graph_grpo.prior == 0.25
