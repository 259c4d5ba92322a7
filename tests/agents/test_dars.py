"""``dars`` (agents/credit/dars.py) on hand-worked groups: when only the renders vary the renderer gets the outcome's
credit, when only the plans vary the planner does, a mixed group splits it by the variance the plans explain, and a
plan whose first field is wrong earns no prefix-gated reward."""

import numpy as np
import pytest

from agents import credit as C
from agents.credit.base import Trajectory
from agents.credit.dars import planner_share


def traj(outcome, plan, q):
    """One rollout: a planner step that wrote ``plan`` (prefix-gated score ``q``), then a render."""
    return Trajectory(outcome=outcome, agent=np.arange(2), action=np.zeros(2, dtype=int), plan=[plan, ""],
                      prefix=np.array([q, -1.0]))


def test_renders_that_vary_under_one_plan_give_the_renderer_the_credit():
    group = [traj(r, "P", 1.0) for r in (1, 0, 1, 0)]  # one plan, its renders succeed or not
    A = C.make("grpo")(group).steps
    got = C.make("dars")(group).steps
    assert planner_share(group, C.make("dars").cfg) == 0.0
    for g in range(4):
        np.testing.assert_allclose(got[g], [0.0, A[g][0]])  # the plan is the same: nothing to credit it with


def test_plans_that_vary_give_the_planner_the_credit_and_the_prefix_gate_pays_the_right_prefix():
    group = [traj(1, "P", 1.0), traj(1, "P", 1.0), traj(0, "Q", 0.0), traj(0, "Q", 0.0)]  # Q's first field wrong
    A = C.make("grpo")(group).steps
    got = C.make("dars")(group).steps
    # w = 1: each render reproduces its plan's outcome; mean q = 0.5, so Q's planner steps get -0.5 besides
    np.testing.assert_allclose([a[0] for a in got], [A[0][0] + 0.5, A[1][0] + 0.5, A[2][0] - 0.5, A[3][0] - 0.5])
    np.testing.assert_allclose([a[1] for a in got], 0.0)
    assert C.make("dars", gate=0.0)(group).steps[2][0] == pytest.approx(A[2][0])  # the gate alone adds the +-0.5


def test_a_mixed_group_splits_the_credit_by_the_variance_the_plans_explain():
    # plans P x3 (all succeed), Q x3 (one of three renders succeeds); outcomes mean 2/3
    group = [traj(1, "P", 1.0)] * 3 + [traj(1, "Q", 0.5), traj(0, "Q", 0.5), traj(0, "Q", 0.5)]
    # within Q: sum of squares 2/3 over (2 + 2) degrees of freedom = 1/6; total: 4/3 over 5 = 4/15; w = 1 - 15/24
    w = planner_share(group, C.make("dars").cfg)
    assert w == pytest.approx(3 / 8)
    A = C.make("grpo")(group).steps
    got = C.make("dars")(group).steps
    q_bar = 0.75
    for g, q in enumerate([1.0] * 3 + [0.5] * 3):
        np.testing.assert_allclose(got[g], [w * A[g][0] + (q - q_bar), (1 - w) * A[g][1]])
        assert got[g][0] - (q - q_bar) + got[g][1] == pytest.approx(A[g][0])  # the two shares add up to A_g


def test_no_plan_rendered_twice_falls_back_to_the_prior():
    group = [traj(1, "P", 1.0), traj(0, "Q", 1.0)]
    assert planner_share(group, C.make("dars").cfg) == 0.5
    assert planner_share(group, C.make("dars", prior=0.2).cfg) == 0.2


def test_it_needs_the_plan_signals_and_a_world_without_them_is_refused():
    from scenarios.run.config import ConfigError, load

    assert C.needs("dars") == frozenset({"outcome", "plan", "prefix"})
    with pytest.raises(ConfigError, match="dars.*plan, prefix"):
        load("multihop", ['agents.actions="grpo"', "agents.credit=dars"])
    assert load("plangrid", ['agents.actions="grpo"', "agents.credit=dars"]).agents.credit == "dars"
