"""Each batch-A estimator on a small group whose advantages are worked out by hand, plus its invariants."""

import numpy as np
import pytest

from agents import credit as C
from agents.credit import casi, steppo, taspo, triage
from agents.credit.base import Trajectory

R = 1 / (1 + 2e-6)  # (1 - 0.5) / (0.5 + 1e-6): grpo's advantage of outcomes [1, 0]


def traj(outcome, T, **signals):
    return Trajectory(outcome=outcome, agent=np.arange(T), action=np.zeros(T, dtype=int), **signals)


def run(name, group, **settings):
    return C.make(name, **settings)(group)


def close(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_grpo_broadcasts_the_outcome_advantage():
    close(run("grpo", [traj(1, 2), traj(0, 1)]).steps, [[R, R], [-R]])


def test_bucket_brigade_is_the_ledger_profit():
    close(run("bucket_brigade", [traj(1, 2, profit=np.array([0.2, -0.1]))]).steps, [[0.2, -0.1]])


def test_steppo_discounted_returns_against_the_per_step_group_mean():
    # gamma 1, equal lengths, no step rewards: grpo exactly
    close(run("steppo", [traj(1, 2, logp=np.zeros(2)), traj(0, 2, logp=np.zeros(2))]).steps, [[R, R], [-R, -R]])
    # gamma 0.5: returns [0.25, 0.5] and [0, 0]; per-step means [0.125, 0.25]; std of {.25, .5, 0, 0} = sqrt(0.04296875)
    s = np.sqrt(0.04296875)
    got = run("steppo", [traj(1, 2, logp=np.zeros(2)), traj(0, 2, logp=np.zeros(2))], gamma=0.5).steps
    close(got, [[0.125 / s, 0.25 / s], [-0.125 / s, -0.25 / s]])
    # the length-normalised ratio: exp((-1 - -2) / 2 tokens)
    np.testing.assert_allclose(steppo.ratio([-1.0], [-2.0], [2]), [np.exp(0.5)])


def test_cast_is_the_change_in_solver_value():
    close(run("cast", [traj(1, 3, solver=np.array([-3.0, -2, -2, 0]))]).steps, [[1, 0, 2]])


def success_and_detour():
    """S: 0 -> 1 -> 2 (solved); F: 0 -> 0 -> 1 -> 1 (failed); progress = state / 2."""
    S = traj(1, 2, state=[0, 1, 2], progress=np.array([0, 0.5, 1]))
    F = traj(0, 3, state=[0, 0, 1, 1], progress=np.array([0, 0, 0.5, 0.5]))
    return [S, F]


def test_proas_masks_reasonable_steps_and_charges_the_early_detour_most():
    # F's edges: 0->0 (unknown, stalls), 0->1 (in the reference graph), 1->1 (unknown, stalls)
    # stalls [1, 0, 1], future drift [2, 1, 1], unreasonable weights [2, 0, 1]; total penalty 3 x (-R)
    est = C.make("proas")
    got = est(success_and_detour()).steps
    close(got, [[R, R], [-2 * R, 0, -R]])
    assert {(0, 1), (1, 2)} <= est.cfg.reference  # kept online
    assert np.isclose(got[1].sum(), 3 * -R)


def test_traj_graph_backs_up_the_outcome_over_the_merged_graph():
    # V(2) = 1; V(1) = (V(2) + V(1) + 0) / 3 -> 1/2; V(0) = (2 V(1) + V(0)) / 3 -> 1/2
    raw = run("traj_graph", success_and_detour(), normalise=False).steps
    close(raw, [[0, 0.5], [0, 0, 0]])
    # normalised over edges leaving the same node: node 1 is left by a = 0.5 (S) and 0 (F): -> +1, -1
    close(run("traj_graph", success_and_detour()).steps, [[0, 0.25 / 0.250001], [0, 0, -0.25 / 0.250001]])


def test_knowgpo_mixes_condition_gain_with_the_outcome():
    e, a, ab = frozenset(), frozenset("a"), frozenset("ab")
    S, F = traj(1, 2, conditions=[e, a, ab]), traj(0, 2, conditions=[e, e, a])
    # gains / K=2: S [.5, .5], F [0, .5]; from {}: {S0 .5, F0 0, F1 .5} mean 1/3; from {a}: {S1 .5}
    # P: S [1/6, 0], F [-1/3, 1/6]; A = 0.7 A_g + 0.3 P
    close(run("knowgpo", [S, F]).steps, [[0.7 * R + 0.05, 0.7 * R], [-0.7 * R - 0.1, -0.7 * R + 0.05]])


def test_casi_shapley_and_bounded_zero_sum_shaping():
    np.testing.assert_allclose(casi.shapley(np.array([0, 1, 2, 4.0])), [1.5, 2.5])  # v({}), v({0}), v({1}), v({0,1})
    np.testing.assert_allclose(casi.project(np.array([3.0, -1, -2]), 0.5), [0.5, 0, -0.5], atol=1e-9)
    g1 = traj(1, 2, results=[np.array([0, 1, 2, 4.0]), np.array([0, 0.0])])  # step scores 4, 0 -> centred [2, -2]
    g2 = traj(0, 2, results=[np.array([0, 1.0]), np.array([0, 1.0])])  # scores 1, 1 -> centred [0, 0]
    # shared scale 2 std{2, -2, 0, 0} = 2 sqrt 2; x kappa / scale = +-0.5 / sqrt 2
    out = run("casi", [g1, g2])
    h = 0.5 / np.sqrt(2)
    close(out.steps, [[R + h, R - h], [-R, -R]])
    assert out.skills[(0, 0, 0)] == pytest.approx(1.5) and out.skills[(0, 0, 1)] == pytest.approx(2.5)
    wild = [traj(r, 4, results=[np.array([0, v]) for v in vals]) for r, vals in [(1, [9, 0, 0, 0]), (0, [0, 3, -4, 1])]]
    for t, adv, a_g in zip(wild, run("casi", wild, kappa=0.3).steps, [R, -R]):
        shaping = adv - a_g
        assert abs(shaping.sum()) < 1e-9 and np.abs(shaping).max() <= 0.3 + 1e-9


def test_delta_ttg_redistributes_by_meter_drop_sign_aware():
    S = traj(1, 3, meter=np.array([3.0, 2, 2, 0]))  # drops [1, 0, 2]: q [1/3, 0, 2/3], 3 w = [1, .2, 1.8]
    F = traj(0, 2, meter=np.array([3.0, 4, 3]))  # failure blames increases: u [1, 0], 2 w = [1.8, .2]
    close(run("delta_ttg", [S, F]).steps, [[R, 0.2 * R, 1.8 * R], [-1.8 * R, -0.2 * R]])
    close(run("delta_ttg", [S, F], cap=1.5).steps[:1], [[R, 0.2 * R, 1.5 * R]])


def test_taspo_keeps_sign_and_sum_with_mean_one_weights():
    S, F = traj(1, 3, score=np.array([1.0, 0, -1])), traj(0, 2, score=np.zeros(2))
    w = 1 + 0.2 * np.tanh([1.0, 0, -1])
    close(run("taspo", [S, F]).steps, [R * w, [-R, -R]])
    rng = np.random.default_rng(0)
    for _ in range(20):
        z = rng.normal(size=6) * 3
        w = taspo.weights(z, 0.2)
        assert w.mean() == pytest.approx(1) and w.min() >= 0.8 - 1e-12 and w.max() <= 1.2 + 1e-12
        adv = run("taspo", [traj(1, 6, score=z), traj(0, 6, score=z[::-1])]).steps
        assert adv[0].sum() == pytest.approx(6 * R) and (adv[0] > 0).all() and (adv[1] < 0).all()


def test_depgpo_credits_only_what_the_verifier_depends_on():
    S = traj(1, 4, deps=[(), (0,), (0,), (2,)])  # the last step read step 2, which read step 0; step 1 is a dead end
    F = traj(0, 1, deps=[()])
    close(run("depgpo", [S, F]).steps, [[R, 0, R, R], [-R]])
    S.checked = (1,)
    close(run("depgpo", [S, F]).steps[:1], [[R, R, 0, 0]])


def test_draco_weights_winners_by_quality_and_losers_by_its_complement():
    S = traj(1, 3, criteria=np.array([[2, 0], [1, 1], [0, 0]]))  # Q [1, .5, .5 (none)]: 3 R [1, .5, .5] / 2
    F = traj(0, 2, criteria=np.array([[1, 0], [0, 2]]))  # Q [1, 0]: 1 - Q = [0, 1]: 2 (-R) [0, 1] / 1
    out = run("draco", [S, F]).steps
    close(out, [[1.5 * R, 0.75 * R, 0.75 * R], [0, -2 * R]])
    assert out[0].sum() == pytest.approx(3 * R) and out[1].sum() == pytest.approx(-2 * R)
    assert (out[0] >= 0).all() and (out[1] <= 0).all()


def test_triage_adds_fixed_process_rewards():
    S, F = traj(1, 2, labels=["progress", "noop"]), traj(0, 2, labels=["regression", "exploration"])
    close(run("triage", [S, F]).steps, [[R + 0.5, R], [-R - 0.5, -R + 0.2]])
    assert triage.labels_from_progress([0, 0.5, 0.5, 0.25, 0.25], [0, 1, 2, 3, 3]) == [
        "progress", "exploration", "regression", "noop"]
    with pytest.raises(ValueError, match="unknown step labels"):
        run("triage", [traj(1, 1, labels=["??"])])


def test_scpo_credits_failed_steps_close_to_a_success():
    S = traj(1, 1, embedding=np.array([[1.0, 0]]))
    F = traj(0, 2, embedding=np.array([[0.96, 0.28], [0, 1.0]]))  # cosines 0.96 (>= 0.9) and 0
    close(run("scpo", [S, F]).steps, [[R], [0.96 * R, -R]])


def test_mcgpo_compares_actions_within_matched_contexts_across_folds():
    def one(action, outcome, extra=False):
        t = traj(outcome, 2 if extra else 1, state=[0, 1, 1][: 3 if extra else 2],
                 progress=np.array([0, 0.5, 0.5][: 3 if extra else 2]))
        t.action = np.array([action, 0][: 2 if extra else 1])
        return t
    # folds {g0, g2} and {g1, g3}; in context (0, 0) the other fold has a0 -> 1 and a1 -> 0: V = .5, n = 1
    group = [one(0, 1), one(0, 1), one(1, 0), one(1, 0, extra=True)]
    close(run("mcgpo", group).steps, [[0.25], [0.25], [-0.25], [-0.25, 0]])  # g3's second context has no match


def test_skillgate_separates_selection_and_execution():
    g0, g1 = traj(1, 2, selection=np.array([1, -1])), traj(0, 2, selection=np.array([0, -1]))
    close(run("skillgate", [g0, g1]).steps, [[0.5, R], [-0.5, -R]])


def test_credo_conserves_outcome_weight_and_learns_from_evidence_when_all_fail():
    roles = ["retrieve", "keep"]
    g0 = traj(1, 2, evidence=np.array([1.0, 0]), role=roles)  # u = [1.05, .05]: 2 R u / 1.1
    g1 = traj(0, 2, evidence=np.array([0.0, 0]), role=roles)  # u = [1.05, 1.05]: 2 (-R) / 2 each
    bonus = [0.25, 0]  # 0.5 x (evidence - its role's mean [.5, 0])
    close(run("credo", [g0, g1]).steps, [[2 * R * 1.05 / 1.1 + 0.25, 2 * R * 0.05 / 1.1],
                                         [-R - 0.25, -R]])
    assert sum(bonus) == 0.25
    dead = [traj(0, 1, evidence=np.array([1.0]), role=["r"]), traj(0, 1, evidence=np.array([0.0]), role=["r"])]
    close(run("credo", dead).steps, [[0.25], [-0.25]])


def test_grse_attributes_skills_jointly():
    def t(outcome, skill):
        x = traj(outcome, 1, skill=[skill])
        x.agent = np.array([0])
        return x
    out = run("grse", [t(1, "good"), t(1, "good"), t(0, "bad"), t(0, "bad")])
    # v_good = [.5, .5, -.5, -.5] = -v_bad; (V^T V + I) = [[2, -1], [-1, 2]], V^T A = [2, -2]: c = [2/3, -2/3]
    assert out.skills[(0, "good")] == pytest.approx(2 / 3 * R, rel=1e-5)
    assert out.skills[(0, "bad")] == pytest.approx(-2 / 3 * R, rel=1e-5)
    close(out.steps, [[R], [R], [-R], [-R]])


def test_missing_signals_are_named():
    with pytest.raises(C.MissingSignals, match=r"'cast' needs signals relay does not provide: solver"):
        C.require("cast", {"outcome", "state"}, "relay")
    with pytest.raises(C.MissingSignals, match="criteria"):
        C.make("draco")([traj(1, 1), traj(0, 1)])
    with pytest.raises(KeyError, match="unknown credit estimator"):
        C.make("nope")
    with pytest.raises(KeyError, match="no setting"):
        C.make("grpo", rho=1)
    assert set(C.supported({"outcome", "state"})) == {"grpo", "traj_graph"}
