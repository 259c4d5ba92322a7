"""The recsys pipeline's workflow traces as trajectories: depgpo, draco, credo and grse on real team rollouts."""

from types import SimpleNamespace

import numpy as np

from agents import credit as C
from agents.credit.workflow import PROVIDES, from_groups
from scenarios.recsys import seeds
from scenarios.recsys.data import VALIDATION
from scenarios.recsys.pipeline import ROLES, Compiled, trace
from skills.credit import Rollout
from skills.workflow import Trace
from tests.scenarios.recsys_small import small_world


def test_a_hand_built_trace_maps_node_by_node():
    t = Trace()
    a = t.invoke("recall", agent="r", skills=["covis"])
    b = t.invoke("rank", status="empty_output", agent="k", skills=["mf", "pop"], after=[a])
    t.invoke("rerank", agent="x", after=[b])
    [[traj]] = from_groups([(0, [Rollout(0.5, t)])])
    assert traj.role == ["recall", "rank", "rerank"] and traj.skill == ["covis", "mf+pop", "-"]
    assert traj.deps == [(), (0,), (1,)] and traj.checked == (2,)
    np.testing.assert_array_equal(traj.criteria, [[1, 0], [0, 1], [1, 0]])
    assert traj.outcome == 0.5 and C.provided([traj]) >= set(PROVIDES)


def test_recsys_team_rollouts_feed_the_workflow_estimators():
    w = small_world()
    lib = Compiled.of([SimpleNamespace(name=n, role=r, rule=rule, label=f"{n}@1") for n, r, _, rule in seeds.INITIAL])
    G, questions = 4, w.data.users(VALIDATION)[:6]
    users = np.repeat(questions, G)
    out = w.pipeline.run(lib, users, w.pipeline.sample_use(lib, users, 0.7, np.random.default_rng(0)))
    agents = {role: f"{role}-agent" for role in ROLES}
    groups = from_groups([(int(q), [Rollout(float(out.reward[i * G + g]), trace(out, lib, i * G + g, agents))
                                    for g in range(G)]) for i, q in enumerate(questions)])
    assert C.supported(PROVIDES) == ["grpo", "depgpo", "draco", "credo", "grse"]
    for group in groups:
        A = C.make("grpo")(group).steps
        for name in ("depgpo", "draco", "credo", "grse"):
            got = C.make(name)(group)
            assert all(np.isfinite(x).all() and len(x) == 3 for x in got.steps)
        # the chain recall -> rank -> rerank: the checked rerank depends on every step
        np.testing.assert_allclose(np.concatenate(C.make("depgpo")(group).steps), np.concatenate(A))
        for d, a in zip(C.make("draco")(group).steps, A):  # sum and sign preserved
            assert np.isclose(d.sum(), a.sum()) and (np.sign(d) * np.sign(a[0]) >= 0).all()
        assert all(isinstance(k[0], str) for k in C.make("grse")(group).skills)
