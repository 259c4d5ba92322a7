"""Each batch-B objective on a tiny batch whose loss is worked out by hand from its formula, one
optimiser step that must raise the rewarded action, and the registry's refusals."""

import dataclasses
import math

import numpy as np
import pytest
import torch
from pydantic import ValidationError

from agents import objectives as O
from agents.credit.base import MissingSignals as CreditMissingSignals
from agents.objectives import eapo, empo, focus, pact, tree_opsd
from agents.objectives.batch import PolicyBatch

T, F = True, False
sig = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731


def t(x, dtype=torch.float64):
    return torch.tensor(x, dtype=dtype)


def batch(logp, old_logp, advantage, mask=None, **signals) -> PolicyBatch:
    logp = t(logp)
    M = logp.shape[0]
    base = dict(logp=logp, old_logp=t(old_logp), advantage=t(advantage),
                mask=torch.ones_like(logp, dtype=torch.bool) if mask is None else t(mask, torch.bool),
                outcome=torch.zeros(M, dtype=torch.float64), group=torch.zeros(M, dtype=torch.long),
                episode=torch.arange(M), entropy=torch.ones_like(logp))
    base.update(signals)
    return PolicyBatch(**base)


def loss(name, b, **settings) -> float:
    return float(O.make(name, **settings)(b)[0])


# ------------------------------------------------------------------------------ hand-computed cases
def grpo_case(**signals):
    """Step 0: mean log r = 0.5, clipped at 1.2 (A = +1); step 1: one real token, log r = -0.1 (A = -1);
    its padding holds -inf, which must never be read."""
    inf = float("inf")
    return batch([[-1.0, -2.0], [-1.0, -inf]], [[-1.5, -2.5], [-0.9, -inf]], [1.0, -1.0], [[T, T], [T, F]], **signals)


GRPO = -(1.2 - math.exp(-0.1)) / 2


def test_grpo_is_the_clipped_length_normalised_step_surrogate():
    assert loss("grpo", grpo_case()) == pytest.approx(GRPO, abs=1e-6)


def test_grpo_kl_is_k3_per_token_averaged_per_step():
    b = grpo_case(ref_logp=t([[-1.0, -2.0], [-1.1, 0.0]]))  # d = 0, 0 | -0.1 (padding ignored)
    k3 = math.exp(-0.1) + 0.1 - 1
    assert loss("grpo", b, kl_coef=0.5) == pytest.approx(GRPO + 0.5 * k3 / 2, abs=1e-6)
    with pytest.raises(O.MissingSignals, match="ref_logp"):
        O.make("grpo", kl_coef=0.5)(grpo_case())


def test_empo_shares_one_ratio_per_effect_within_a_group():
    # group 0: effects 7, 7, 3; group 1: effect 7 again (not the same class: another task)
    b = batch([[0.1], [-0.1], [0.3], [0.05]], [[0.0]] * 4, [1.0, -1.0, 1.0, 1.0],
              group=torch.tensor([0, 0, 0, 1]), effect=torch.tensor([7, 7, 3, 7]))
    c = math.cosh(0.1)  # (e^0.1 + e^-0.1) / 2: the two effect-7 steps of group 0
    rho, classes = empo.shared_ratio(b)
    np.testing.assert_allclose(rho.numpy(), [c, c, math.exp(0.3), math.exp(0.05)], atol=1e-12)
    assert classes == 3
    assert loss("empo", b) == pytest.approx(-(c - c + 1.2 + math.exp(0.05)) / 4, abs=1e-6)


def test_tppo_credits_each_token_its_prefix_value_change():
    # c = [ln 3, -ln 3, pad]: z = [ln 3, 0], V = [3/4, 1/2], A = [1/4, -1/4] (V_{-1} = 1/2)
    b = batch([[0.3, 0.1, 0.0]], [[0.0, 0.0, 0.0]], [0.0], [[T, T, F]],
              outcome=t([1.0]), token_logits=t([[math.log(3), -math.log(3), 5.0]]))
    policy = -(1.2 * 0.25 - 0.25 * math.exp(0.1)) / 2  # token 0 clipped at 1.2, token 1 unclipped
    critic = (-math.log(0.75) - math.log(0.5)) / 2  # BCE of each prefix value on R = 1
    assert loss("tppo", b) == pytest.approx(policy + 0.5 * critic, abs=1e-6)


def test_pact_importance_corrects_the_critic_targets():
    # V = [1/2, 3/4], rho = [1, 1/2], R = 1:  v_1 = 1/2 x 3/4 + 1/2 x 1 = 7/8, v_0 = v_1 (rho_0 = 1)
    # A_1 = R - V_1 = 1/4, A_0 = v_1 - V_0 = 3/8
    b = batch([[0.0, math.log(0.5)]], [[0.0, 0.0]], [0.0], outcome=t([1.0]),
              value_logits=t([[0.0, math.log(3)]]))
    A, v = pact.targets(b)
    np.testing.assert_allclose(A.numpy(), [[0.375, 0.25]], atol=1e-12)
    np.testing.assert_allclose(v.numpy(), [[0.875, 0.875]], atol=1e-12)
    actor = -(0.375 + min(0.5 * 0.25, 0.8 * 0.25)) / 2
    bce1 = -(0.875 * math.log(0.75) + 0.125 * math.log(0.25))
    assert loss("pact", b) == pytest.approx(actor + 0.5 * (math.log(2) + bce1) / 2, abs=1e-6)
    on_policy = batch([[0.0, 0.0]], [[0.0, 0.0]], [0.0], outcome=t([1.0]), value_logits=t([[0.0, math.log(3)]]))
    np.testing.assert_allclose(pact.targets(on_policy)[1].numpy(), [[1.0, 1.0]])  # lambda 1: the outcome itself
    above = batch([[0.0, math.log(2)]], [[0.0, 0.0]], [0.0], outcome=t([0.0]), value_logits=t([[0.0, math.log(3)]]))
    np.testing.assert_allclose(pact.targets(above)[1].numpy(), [[0.0, 0.0]])  # rho = 2 truncated to 1: v = R


def test_tree_opsd_is_the_forward_kl_to_the_bernoulli_teacher():
    # tau 4: q = 1/2 + 1/4 = 3/4 against p = 1/2; q = clamp(1/2 - 1) = 0 against p = sigmoid(ln 3) = 3/4
    b = batch([[0.0], [math.log(3)]], [[0.0], [0.0]], [1.0, -4.0])
    kl0 = 0.75 * math.log(0.75 / 0.5) + 0.25 * math.log(0.25 / 0.5)
    assert loss("tree_opsd", b) == pytest.approx((kl0 + math.log(4)) / 2, abs=1e-6)


def test_tree_opsd_layout_branches_strictly_inside_each_rollout():
    lengths = [3, 1, 2, 5]
    seen = set()
    for seed in range(20):
        source, prefix = tree_opsd.layout(lengths, np.random.default_rng(seed))
        assert source.tolist() == [0, 1, 2, 3, 0, 0, 1, 1, 2, 2, 3, 3]  # M = 4 full, then N = 2 from each
        assert prefix[:4].tolist() == [0, 0, 0, 0]
        assert prefix[6:8].tolist() == [0, 0] and prefix[8:10].tolist() == [1, 1]  # T = 1 -> 0; T = 2 -> 1
        assert all(1 <= p <= 2 for p in prefix[4:6]) and all(1 <= p <= 4 for p in prefix[10:])
        seen.update(prefix[10:].tolist())
    assert seen == {1, 2, 3, 4}  # sampled, not fixed


def test_eapo_token_weights_are_entropy_asymmetric():
    # real entropies [0.5, 1.5 | 0, 2], mean 1 (the padding's 100 is not counted)
    H = t([[0.5, 1.5, 100.0], [0.0, 2.0, 100.0]])
    b = batch([[0.0] * 3] * 2, [[0.0] * 3] * 2, [1.0, -1.0], [[T, T, F], [T, T, F]], entropy=H)
    w = eapo.weights(b, eapo.Config())
    # success: 1 + max(z - 1, 0) = [1, 1.5]; failure: 1 + max(1 - z, 0) = [2, 1]
    np.testing.assert_allclose(w[:, :2].numpy(), [[1.0, 1.5], [2.0, 1.0]], atol=1e-12)
    assert loss("eapo", b) == pytest.approx(-(1 + 1.5 - 2 - 1) / 4, abs=1e-6)
    np.testing.assert_allclose(eapo.weights(b, eapo.Config(boost=2, penalty=0.5))[:, :2].numpy(),
                               [[1.0, 2.0], [1.5, 1.0]], atol=1e-12)
    spread = batch([[0.0, 0.0]], [[0.0, 0.0]], [1.0], entropy=t([[3.5, 0.5]]))  # mean 2: z = [1.75, 0.25]
    np.testing.assert_allclose(eapo.weights(spread, eapo.Config()).numpy(), [[1.75, 1.0]], atol=1e-12)
    high = batch([[0.0] * 3], [[0.0] * 3], [1.0], entropy=t([[4.0, 0.0, 0.5]]))  # mean 1.5: z = 8/3, capped at 2
    np.testing.assert_allclose(eapo.weights(high, eapo.Config()).numpy(), [[2.0, 1.0, 1.0]], atol=1e-12)
    high.advantage = t([0.0])  # neither success nor failure: plain weights
    np.testing.assert_allclose(eapo.weights(high, eapo.Config()).numpy(), [[1.0, 1.0, 1.0]], atol=1e-12)


def test_focus_gain_blend_and_choice():
    # kappa 2: [2 x 4 x 0.25 + (2 - 2) x 0.25] / 4^3 and [0 + (4 - 2) x 0.25] / 6^3
    np.testing.assert_allclose(focus.gain([0.5, 0.0], [0.25, 0.25], [2, 4], 2.0), [2 / 64, 0.5 / 216], atol=1e-12)
    assert focus.plan([0.5, 0.0], [0.25, 0.25], [2, 4], 2.0, 1, [0, 1]).tolist() == [0]
    assert focus.plan([0.0, 0.0], [0.25, 0.25], [0, 4], 2.0, 1, [0, 1]).tolist() == [1]  # no bias: a well-sampled state's variance wins
    # no variance, kappa 2, n = 1: g = 8 b^2 / 27 = [0.074, 0.074, 0.060]; picking candidate 0 counts a rollout for
    # candidate 1 too (the same state 5): 8 x 0.25 / 64 = 0.031 < 0.060, so state 6 is next, then state 5 again
    # (0.031 > 8 x 0.2025 / 64 = 0.025), its first candidate on the tie
    assert focus.plan([0.5, 0.5, 0.45], [0, 0, 0], [1, 1, 1], 2.0, 3, [5, 5, 6]).tolist() == [0, 2, 0]
    np.testing.assert_allclose(focus.blend([0.2, 0.2], [0.8, 0.8], [2, 6], 2.0), [0.5, 0.65], atol=1e-12)


def test_focus_advantage_is_the_outcome_against_critic_and_rollouts_blended_per_state():
    # group 0: state 7 seen by rollouts 0 (R = 1) and 1 (R = 0): n = 2, m = 1/2, critic 1/2 -> V = 1/2;
    # state 9 by rollout 1 only: n = 1, m = 0, critic sigmoid(ln 3) = 3/4 -> V = (2 x 3/4) / 3 = 1/2;
    # group 1's state 7 is another task's: rollout 2 (R = 1) alone, critic 1/2 -> V = (1 + 1) / 3 = 2/3
    b = batch([[0.0]] * 4, [[0.0]] * 4, [9.0] * 4, outcome=t([1.0, 0.0, 0.0, 1.0]), group=torch.tensor([0, 0, 0, 1]),
              episode=torch.tensor([0, 1, 1, 2]), state=torch.tensor([7, 7, 9, 7]),
              value_logits=t([[0.0], [0.0], [math.log(3)], [0.0]]))
    n, m = focus.rollouts_from(b)
    assert n.tolist() == [2, 2, 1, 1] and m.tolist() == [0.5, 0.5, 0.0, 1.0]
    advantage = [0.5, -0.5, -0.5, 1 / 3]  # R - V: the batch's own advantage (9) is not read
    bce = (3 * math.log(2) + math.log(4)) / 4
    assert loss("focus", b) == pytest.approx(-sum(advantage) / 4 + 0.5 * bce, abs=1e-6)


def test_sero_adds_the_likelihood_weighted_oracle_term():
    b = grpo_case(oracle_logp=t([[-0.5, -1.5], [-2.0, 0.0]]), oracle_mask=t([[T, T], [F, F]], torch.bool),
                  oracle_weight=t([0.4, 0.9]))  # step 1 has no oracle continuation
    assert loss("sero", b) == pytest.approx(GRPO + 0.1 * (-(0.4 * -1.0) / 1), abs=1e-6)
    assert loss("sero", b, coef=0.5) == pytest.approx(GRPO + 0.5 * 0.4, abs=1e-6)
    # no advantage: the oracle term alone, averaged over the two steps that have an oracle
    three = batch([[0.0]] * 3, [[0.0]] * 3, [0.0] * 3, oracle_logp=t([[-1.0], [-3.0], [-9.0]]),
                  oracle_mask=t([[T], [T], [F]], torch.bool), oracle_weight=t([0.5, 0.25, 1.0]))
    assert loss("sero", three) == pytest.approx(0.1 * (0.5 * 1.0 + 0.25 * 3.0) / 2, abs=1e-6)


def test_diamond_sd_adds_the_cross_entropy_of_the_recovery_steps_retrieved_replies():
    """Step 0 is a recovery step (its retrieved reply: two tokens, log-probs -0.5 and -1.5), step 1 is not (no tokens;
    its -9 never read): grpo's surrogate plus beta x 1.0, the recovery step's mean negative log-likelihood."""
    b = grpo_case(subgoals=t([0, 1], torch.long), breakpoint=t([T, F], torch.bool),
                  retrieved_logp=t([[-0.5, -1.5], [-9.0, -9.0]]), retrieved_mask=t([[T, T], [F, F]], torch.bool))
    assert loss("diamond_sd", b) == pytest.approx(GRPO + 1.0, abs=1e-6)
    assert loss("diamond_sd", b, beta=0.25) == pytest.approx(GRPO + 0.25, abs=1e-6)
    stats = O.make("diamond_sd")(b)[1]
    assert (stats["breakpoints"], stats["recovery_steps"], stats["canonical_states"]) == (1.0, 1.0, 2.0)
    none = dataclasses.replace(b, retrieved_mask=t([[F, F], [F, F]], torch.bool))  # nothing retrieved: grpo alone
    assert loss("diamond_sd", none) == pytest.approx(GRPO, abs=1e-6)


def test_ca_pg_marginal_hit_probability_and_top1():
    # row 0: p = softmax(0, 0, ln 2) = [1/4, 1/4, 1/2], item 0; row 1: item not among the candidates
    recs = dict(item_logits=t([[0.0, 0.0, math.log(2)], [0.0, 0.0, 0.0]]), target=torch.tensor([0, -1]), list_len=2)
    b = batch([[0.0], [0.0]], [[0.0], [0.0]], [0.0, 0.0], **recs)
    assert loss("ca_pg", b) == pytest.approx(-(1 - 0.75**2), abs=1e-6)
    # TOP1 against the 2 best others (items 2 and 1): sigmoid(s_j - s_0) + sigmoid(s_j^2), averaged
    top1 = (sig(math.log(2)) + sig(math.log(2) ** 2) + sig(0) + sig(0)) / 2
    assert loss("ca_pg", b, variant="top1") == pytest.approx(top1, abs=1e-6)
    b.list_len = 1  # only item 2 now
    assert loss("ca_pg", b) == pytest.approx(-0.25, abs=1e-6)
    assert loss("ca_pg", b, variant="top1") == pytest.approx(sig(math.log(2)) + sig(math.log(2) ** 2), abs=1e-6)


# ------------------------------------------------------------------ one step raises the rewarded action
ACTIONS = torch.tensor([0, 1, 0, 1])  # one group of four one-step rollouts; action 0 succeeded


def rule_batch(theta, name):
    logp = torch.log_softmax(theta, -1)[ACTIONS]
    sign = t([1.0, -1.0, 1.0, -1.0], torch.float32)
    fields = dict(logp=logp, old_logp=logp.detach(), advantage=sign, outcome=(sign + 1) / 2,
                  group=torch.zeros(4, dtype=torch.long), episode=torch.arange(4), entropy=torch.ones(4),
                  effect=ACTIONS)
    params = [theta]
    if name in ("tppo", "pact", "focus", "process_branching"):
        # tppo's advantage is all critic: start it rating the successes up (pact's and focus's A = R - V need no
        # head start); focus's four rollouts act in one state
        critic = (sign if name == "tppo" else torch.zeros(4)).clone().requires_grad_(True)
        fields["token_logits" if name == "tppo" else "value_logits"], params = critic, [theta, critic]
        fields["state"] = torch.zeros(4, dtype=torch.long)
    if name in ("process_branching", "contextpilot"):  # the last two rollouts are branches
        fields["branch"] = torch.tensor([False, False, True, True])
    if name == "contextpilot":  # the first step edited the context
        fields["context_edit"] = torch.tensor([True, False, False, False])
    if name == "sero":  # no advantage at all: the oracle, which takes action 0, alone must move the policy
        oracle = torch.log_softmax(theta, -1)[torch.zeros(4, dtype=torch.long)]
        fields.update(advantage=torch.zeros(4), oracle_logp=oracle,
                      oracle_mask=torch.ones(4, dtype=torch.bool), oracle_weight=torch.full((4,), 0.5))
    if name in ("agentopsd", "alignopsd", "trial", "cepo", "h2sd", "stop_segment", "rredcot"):  # privileged passes
        # that agree with the agent, a belief no reply moved, replies that all say the same: grpo's update
        # (stop_segment: less its centred re-check penalty)
        fields.update(teacher_logp=logp.detach(), hindsight_logp=logp.detach(), sibling_logp=logp.detach(),
                      belief_before=torch.zeros(4), belief_after=torch.zeros(4), thought=torch.ones(4, 2))
    if name == "distil":  # the failures' teacher (told the answer) wrote action 0, and the world verified it
        fields.update(teacher_sample_logp=torch.log_softmax(theta, -1)[torch.zeros(4, dtype=torch.long)],
                      teacher_sample_mask=torch.ones(4, dtype=torch.bool), teacher_verified=sign < 0)
    if name == "diamond_sd":  # the failures broke at their step; the success's reply at their state was action 0
        fields.update(subgoals=torch.zeros(4, dtype=torch.long), breakpoint=sign < 0,
                      retrieved_logp=torch.log_softmax(theta, -1)[torch.zeros(4, dtype=torch.long)],
                      retrieved_mask=sign < 0)
    if name == "evidence_diagnosis":  # the failures' replies lowered the belief (located); their rewrites take action 0
        fields.update(belief_before=torch.zeros(4), belief_after=(sign - 1) / 2, grounding=torch.ones(4),
                      rubric_sample_logp=torch.log_softmax(theta, -1)[torch.zeros(4, dtype=torch.long)],
                      rubric_sample_mask=sign < 0, rubric_sample_grounding=torch.ones(4))
    if name == "hint_sd":  # the failures located; a hinted teacher that disowns their action
        fields.update(hint_logp=logp.detach() - 1.0, located=sign < 0)
    if name.startswith("ca_pg"):  # a recommender whose held-out item is candidate 0
        fields.update(item_logits=theta.expand(4, 3), target=torch.zeros(4, dtype=torch.long), list_len=2)
    return PolicyBatch.one_token(**fields), params


@pytest.mark.parametrize("name", [*O.NAMES, "ca_pg:top1"])
def test_one_adam_step_raises_the_rewarded_action(name):
    theta = torch.zeros(3, requires_grad=True)
    b, params = rule_batch(theta, name)
    opt = torch.optim.Adam(params, lr=0.1)
    settings = {"variant": "top1"} if name == "ca_pg:top1" else {}
    value, stats = O.make(name.split(":")[0], **settings)(b)
    assert all(isinstance(v, float) for v in stats.values())
    before = float(torch.log_softmax(theta.detach(), -1)[0])
    opt.zero_grad()
    value.backward()
    opt.step()
    assert float(torch.log_softmax(theta.detach(), -1)[0]) > before + 1e-3


# --------------------------------------------------------------------------------------- registry
def test_registry_names_needs_and_refusals():
    assert O.NAMES[0] == "grpo"
    assert set(O.NAMES) == {"grpo", "empo", "tppo", "pact", "tree_opsd", "eapo", "focus", "sero", "ca_pg", "agentopsd",
                            "alignopsd", "trial", "cepo", "h2sd", "stop_segment", "rredcot", "process_branching", "distil",
                            "hint_sd", "contextpilot", "diamond_sd", "evidence_diagnosis"}
    assert O.needs("grpo") == () and O.needs("empo") == ("effect",) and O.needs("tppo") == ("token_logits",)
    assert set(O.needs("sero")) == {"oracle_logp", "oracle_mask", "oracle_weight"}
    assert set(O.needs("ca_pg")) == {"item_logits", "target", "list_len"}
    for name in O.NAMES:
        assert set(O.needs(name)) <= set(O.SIGNALS), name
    with pytest.raises(O.MissingSignals, match=r"'empo' needs signals the relay world does not provide: effect"):
        O.require("empo", {"logp", "entropy"}, "the relay world")
    assert issubclass(O.MissingSignals, CreditMissingSignals)
    assert O.require("tppo", {"token_logits"}, "blocks", clip=0.1).cfg.clip == 0.1
    with pytest.raises(O.MissingSignals, match="effect"):
        O.make("empo")(grpo_case())  # a batch without effect ids
    with pytest.raises(KeyError, match="cliip"):
        O.make("grpo", cliip=0.3)
    with pytest.raises(KeyError, match="unknown objective"):
        O.make("ppo")
    with pytest.raises(ValidationError):
        O.make("grpo", clip=2.0)


def test_policy_batch_checks_shapes_and_lists_its_signals():
    with pytest.raises(ValueError, match="old_logp"):
        batch([[0.0, 0.0]], [[0.0]], [1.0])
    b = PolicyBatch.one_token(logp=t([-1.0, -2.0]), old_logp=t([-1.0, -2.0]), advantage=t([1.0, -1.0]),
                              outcome=t([1.0, 0.0]), group=torch.zeros(2, dtype=torch.long), episode=torch.arange(2),
                              entropy=t([0.1, 0.2]), effect=torch.tensor([0, 1]))
    assert b.logp.shape == (2, 1) and bool(b.mask.all())
    assert b.provided() & set(O.SIGNALS) == {"effect"}
    with pytest.raises(ValueError, match="thought"):  # one embedding per step
        dataclasses.replace(b, thought=torch.ones(3, 4))


def test_objective_settings_from_the_config_reach_the_objective_and_bad_ones_are_refused():
    from agents.objectives import for_agents
    from scenarios.run.config import ConfigError, load

    base = ['agents.actions="grpo"', "market.batch=8", "agents.objective=eapo", "agents.clip=0.3"]
    objective = for_agents(load("relay", base + ["agents.objective_settings.eapo.boost=2.5"]).agents)
    assert (objective.name, objective.cfg.boost, objective.cfg.clip, objective.cfg.penalty) == ("eapo", 2.5, 0.3, 1.0)
    sero = for_agents(load("relay", ['agents.actions="grpo"', "market.batch=8", "agents.objective=sero"]).agents)
    assert sero.cfg.grpo.clip == 0.2  # the inner grpo's clip is agents.clip too
    for objective in ("sero", "grpo"):  # one KL key: agents.kl
        with pytest.raises(ConfigError, match=rf"{objective}\.(grpo\.)?kl_coef = 0.1: set agents\.kl, the KL weight"):
            load("relay", ['agents.actions="grpo"', "market.batch=8", f"agents.objective={objective}",
                           f"agents.objective_settings.{objective}.{'grpo.' * (objective == 'sero')}kl_coef=0.1"])
    for extra, message in [("agents.objective_settings.tree_opsd.tau=2.0", r"tree_opsd = \{'tau': 2.0\}: not read"),
                           ("agents.objective_settings.eapo.boos=1", r"eapo.boos = 1: unknown key \(did you mean 'boost'"),
                           ("agents.objective_settings.eapo.clip=0.1", "set agents.clip"),
                           ("agents.objective_settings.eapx.boost=1", "unknown objective 'eapx' .did you mean 'eapo'"),
                           ("agents.objective_settings.eapo.boost=-1", "eapo.boost = -1: Input should be greater"),
                           ("agents.objective_settings.eapo.boost=true", "eapo.boost = True: expected a number")]:
        with pytest.raises(ConfigError, match=message):
            load("relay", base + [extra])
    assert "kl_coef" not in load("relay", base).to_dict()["agents"]["objective_settings"]["eapo"]  # the chosen one's in full
