"""Workflow traces: per-role penalty lam x failed/total; team and per-role rewards; the DAG itself."""

import json

import numpy as np
import pytest

from skills.workflow import Trace, rewards, role_penalty


def pipeline() -> Trace:
    """recall twice (one invalid), rank once (ok), rerank once (timed out)."""
    t = Trace()
    a = t.invoke("recall", agent="r1", skills=["recall-broad"])
    b = t.invoke("recall", "invalid_output", agent="r2", skills=["recall-sloppy"], output="ids: ???")
    c = t.invoke("rank", agent="k1", skills=["rank-strong", "rank-harmful"], after=[a, b])
    t.invoke("rerank", "timeout", agent="x1", after=[c])
    return t


def test_each_role_pays_lambda_times_its_failed_share():
    t = pipeline()
    assert t.penalties(0.1) == pytest.approx({"recall": 0.05, "rank": 0.0, "rerank": 0.1})
    assert t.penalty(0.1) == pytest.approx(0.15)
    failed, total = t.counts(["recall", "rank", "rerank", "absent"])
    assert failed.tolist() == [1, 0, 1, 0] and total.tolist() == [2, 1, 1, 0]
    team, per_role = rewards(1.0, failed, total, 0.1)
    assert team == pytest.approx(0.85) and per_role == pytest.approx([0.95, 1.0, 0.9, 1.0])


def test_rewards_vectorize_over_rollouts():
    failed = np.array([[[0, 0], [1, 0]], [[2, 1], [0, 0]]])  # [Q=2, G=2, R=2]
    total = np.array([[[2, 1], [2, 1]], [[2, 1], [2, 0]]])
    team, per_role = rewards(np.ones((2, 2)), failed, total, 0.2)
    assert team.shape == (2, 2) and per_role.shape == (2, 2, 2)
    np.testing.assert_allclose(team, [[1.0, 0.9], [0.6, 1.0]])
    assert role_penalty(failed, total, 0.2)[1, 0] == pytest.approx([0.2, 0.2])


def test_the_trace_is_a_dag_of_checked_steps():
    t = pipeline()
    assert t.failed() == [1, 3] and t.failed_upstream(3) == [1] and t.failed_upstream(2) == [1]
    assert t.skills_used() == {"r1": {"recall-broad"}, "r2": {"recall-sloppy"}, "k1": {"rank-strong", "rank-harmful"},
                               "x1": set()}
    assert "step 1: recall (r2) skills=[recall-sloppy] after=[] -> invalid_output: 'ids: ???'" in t.describe()
    with pytest.raises(ValueError, match="status 'crashed' is not one of"):
        t.invoke("rank", "crashed")
    with pytest.raises(ValueError, match="after 9: no such step"):
        t.invoke("rank", after=[9])
    restored = Trace()
    restored.load_state_dict(json.loads(json.dumps(t.state_dict())))
    assert restored.describe() == t.describe() and restored.penalties(0.1) == t.penalties(0.1)
    assert restored.failed_upstream(3) == [1] and restored.skills_used() == t.skills_used()
