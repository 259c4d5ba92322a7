"""Property tests: no estimator returns NaN or infinity on degenerate groups, and each returns one
advantage per step (equal rewards, one-step and zero-step trajectories, empty optional signals)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from agents import credit as C
from agents.credit.base import Trajectory

LABELS = ("progress", "exploration", "noop", "regression")


@st.composite
def trajectories(draw, outcome, empty: bool):
    T = draw(st.integers(0, 3))
    floats = st.floats(-5, 5, allow_nan=False, width=32)
    vec = lambda n: np.array(draw(st.lists(floats, min_size=n, max_size=n)), dtype=np.float64)
    states = draw(st.lists(st.integers(0, 2), min_size=T + 1, max_size=T + 1))
    m = 0 if empty else draw(st.integers(0, 2))
    return Trajectory(
        outcome=outcome, agent=np.array(draw(st.lists(st.integers(0, 2), min_size=T, max_size=T)), dtype=int),
        action=np.array(draw(st.lists(st.integers(0, 2), min_size=T, max_size=T)), dtype=int),
        reward=vec(T), role=[f"r{s}" for s in states[:T]], state=states, progress=np.array(states) / 2.0,
        meter=np.zeros(T + 1) if empty else vec(T + 1), solver=vec(T + 1),
        conditions=[frozenset() if empty else frozenset(range(s)) for s in states],
        paired=np.zeros((T + 1, 2)) if empty else np.abs(vec(2 * T + 2)).reshape(T + 1, 2),
        deps=[() if empty or t == 0 else (t - 1,) for t in range(T)], logp=vec(T), entropy=vec(T),
        embedding=np.zeros((T, 4)) if empty else np.eye(4)[np.array(states[:T], dtype=int)],
        results=[np.zeros(2 ** m) if empty else vec(2 ** m) for _ in range(T)],
        criteria=np.zeros((T, 2)) if empty else np.abs(vec(2 * T)).reshape(T, 2),
        evidence=np.zeros(T) if empty else np.clip(vec(T), 0, 1), labels=[LABELS[s] for s in states[:T]],
        selection=np.array([-1 if s == 0 else s - 1 for s in states[:T]]), score=np.zeros(T) if empty else vec(T),
        profit=vec(T), skill=[f"s{a}" for a in states[:T]], hit=np.array([s - 1 for s in states[:T]], dtype=int),
        plan=[f"p{s}" if s else "" for s in states[:T]], prefix=np.array([s / 2 - 0.5 for s in states[:T]]),
        cited=np.array([s - 1 for s in states[:T]], dtype=int),
        retrieved=[() if empty or s == 0 else tuple(range(s)) for s in states[:T]],
    )


@st.composite
def groups(draw):
    G = draw(st.integers(1, 4))
    equal = draw(st.booleans())
    empty = draw(st.booleans())
    first = draw(st.sampled_from([0.0, 1.0, 0.37]))
    outcomes = [first] * G if equal else draw(st.lists(st.sampled_from([0.0, 1.0, 0.37]), min_size=G, max_size=G))
    return [draw(trajectories(r, empty)) for r in outcomes]


@settings(max_examples=40, deadline=None)
@given(groups())
def test_every_estimator_is_finite_on_degenerate_groups(group):
    for name in C.NAMES:
        out = C.make(name)(group)
        assert [len(a) for a in out.steps] == [len(t) for t in group], name
        for a in out.steps:
            assert np.isfinite(a).all(), (name, a)
        assert all(np.isfinite(v) for v in out.skills.values()), name


@settings(max_examples=40, deadline=None)
@given(groups())
def test_equal_outcomes_give_zero_outcome_advantage(group):
    for t in group:
        t.outcome = 1.0
    for name in ("grpo", "draco", "taspo", "depgpo", "delta_ttg", "proas", "self_credit"):
        for a in C.make(name)(group).steps:
            np.testing.assert_allclose(a, 0.0, atol=1e-12)
