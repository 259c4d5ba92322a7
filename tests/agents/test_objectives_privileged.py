"""Batch C's privileged-pass objectives on hand-worked batches: a planted faulty turn or token whose credit
the method must move the right way (grpo, the reference, spreads it evenly), and the config's refusals."""

import math

import pytest
import torch

from agents import objectives as O
from agents.objectives.batch import PolicyBatch


def t(x, dtype=torch.float64):
    return torch.tensor(x, dtype=dtype)


def batch(advantage, episode, mask=None, **informed):
    """Student log-probs all -1 (with grad), on-policy; ``informed``: [M, L] privileged log-probs."""
    first = t(next(iter(informed.values())))
    logp = torch.full_like(first, -1.0).requires_grad_()
    M = logp.shape[0]
    return PolicyBatch(logp=logp, old_logp=logp.detach(), advantage=t(advantage), outcome=(t(advantage) > 0).double(),
                       mask=torch.ones_like(logp, dtype=torch.bool) if mask is None else t(mask, torch.bool),
                       group=torch.zeros(M, dtype=torch.long), episode=torch.tensor(episode), entropy=torch.ones_like(logp),
                       **{k: t(v) for k, v in informed.items()})


def grad(name, b, **settings):
    value, stats = O.make(name, **settings)(b)
    value.backward()
    return float(value.detach()), b.logp.grad, stats


def test_agentopsd_gives_the_turn_that_moves_the_teachers_belief_most_of_a_failures_blame():
    # one failed episode of three one-token turns; the teacher (correct answer in context) finds turn 2's token
    # e^4 times less likely than the agent did: g = [0, -4, 0], d = [0, 1/4 x 4, 0], w = 0.5 + 0.5 x [0, 3, 0]
    b = batch([-1.0] * 3, [0, 0, 0], teacher_logp=[[-1.0], [-5.0], [-1.0]])
    value, g, stats = grad("agentopsd", b)
    assert value == pytest.approx(-(-0.5 - 2.0 - 0.5) / 3)
    assert g[:, 0].tolist() == pytest.approx([0.5 / 3, 2 / 3, 0.5 / 3])  # descent lowers turn 2 four times as much
    # grpo on the same batch blames every turn alike
    assert grad("grpo", batch([-1.0] * 3, [0, 0, 0], teacher_logp=[[-1.0]] * 3))[1][:, 0].tolist() == pytest.approx([1 / 3] * 3)


def test_agentopsd_gate_discounts_evidence_once_the_belief_is_settled():
    # turn 1's gap -10 settles the belief (B ~ 4.5e-5); turn 2's -4 then barely moves it: d_2 = B(1 - B) 4 ~ 0
    b = batch([-1.0, -1.0], [0, 0], teacher_logp=[[-11.0], [-5.0]])
    _, g, _ = grad("agentopsd", b, lam=1.0)
    prior = 1 / (1 + math.exp(10))
    d = [0.25 * 10, prior * (1 - prior) * 4]
    assert g[:, 0].tolist() == pytest.approx([d[0] / sum(d), d[1] / sum(d)], rel=1e-6)
    assert g[0, 0] > 100 * g[1, 0]


def test_trial_redistributes_by_the_signed_hindsight_gap_with_token_weighted_mean_one():
    # episode 0 succeeded: turn 1 (1 token) is likelier in hindsight (s = +2), turn 2 (2 tokens) unmoved;
    # episode 1 failed: its turn 1 is disowned (s = -1). u = exp(sign(A) s - max), w = u x sum n / sum n u
    mask = [[True, False], [True, True], [True, False], [True, True]]
    b = batch([1.0, 1.0, -1.0, -1.0], [0, 0, 1, 1], mask,
              hindsight_logp=[[1.0, 0.0], [-1.0, -1.0], [-2.0, 0.0], [-1.0, -1.0]])
    _, g, stats = grad("trial", b)
    z = [2.0, 0.0, 1.0, 0.0]
    u = [math.exp(v - 2.0) for v in z]
    w = [u[0] * 3 / (u[0] + 2 * u[1]), u[1] * 3 / (u[0] + 2 * u[1]), u[2] * 3 / (u[2] + 2 * u[3]), u[3] * 3 / (u[2] + 2 * u[3])]
    assert w[0] + 2 * w[1] == pytest.approx(3) and w[0] > 1 > w[1] and w[2] > 1 > w[3]
    # step gradient of -mean_m A_m w_m rho_m, rho from the step's mean log-ratio: split over its tokens
    step = [-a * wi / 4 for a, wi in zip([1.0, 1.0, -1.0, -1.0], w)]
    assert g[:, 0].tolist() == pytest.approx([step[0], step[1] / 2, step[2], step[3] / 2])
    assert g[2, 0] > g[3, 0] > 0  # the failure's disowned turn is pushed down hardest


def test_cepo_tokens_that_follow_the_wrong_answer_lose_most_in_a_failure_and_the_right_one_gain_in_a_success():
    # c = teacher - sibling = [+2, 0, -2] in both rows; lambda 0.5, eps_w 0.5
    b = batch([1.0, -1.0], [0, 1], teacher_logp=[[0.0, -1.0, -3.0]] * 2, sibling_logp=[[-2.0, -1.0, -1.0]] * 2)
    value, g, _ = grad("cepo", b)
    A = [[1.5, 1.0, 0.5], [-0.5, -1.0, -1.5]]
    assert value == pytest.approx(0.0)
    assert g.flatten().tolist() == pytest.approx([-a / 6 for row in A for a in row])
    # with eps_w small the weights stay near 1: the outcome's direction always wins
    _, g, _ = grad("cepo", batch([1.0, -1.0], [0, 1], teacher_logp=[[0.0, -1.0, -3.0]] * 2,
                                  sibling_logp=[[-2.0, -1.0, -1.0]] * 2), eps_w=0.1)
    assert bool((g[0] < 0).all()) and bool((g[1] > 0).all())


def test_each_declares_its_privileged_signal_and_a_world_without_it_is_refused_at_load():
    from scenarios.run.config import ConfigError, load

    assert O.needs("agentopsd") == ("teacher_logp",) and O.needs("trial") == ("hindsight_logp",)
    assert set(O.needs("cepo")) == {"teacher_logp", "sibling_logp"}
    for name, signal in [("agentopsd", "teacher_logp"), ("trial", "hindsight_logp"), ("cepo", "sibling_logp"),
                         ("h2sd", "teacher_logp"), ("stop_segment", "belief_after"), ("rredcot", "belief_before"),
                         ("alignopsd", "teacher_logp, thought"), ("distil", "teacher_verified"),
                         ("hint_sd", "located")]:
        with pytest.raises(ConfigError, match=f"{name}.*{signal}"):  # relay's rule logits have no privileged pass
            load("relay", ['agents.actions="grpo"', "market.batch=8", f"agents.objective={name}"])
    objective = O.for_agents(load("wordmath", ['agents.actions="grpo"', "agents.objective=agentopsd",
                                               "agents.objective_settings.agentopsd.gamma=0.5"]).agents)
    assert (objective.cfg.gamma, objective.cfg.lam) == (0.5, 0.5)
    with pytest.raises(ConfigError, match="cepo.eps_w"):
        load("wordmath", ['agents.actions="grpo"', "agents.objective=cepo", "agents.objective_settings.cepo.eps_w=2"])
    objective = O.for_agents(load("wordmath", ['agents.actions="grpo"', "agents.objective=alignopsd",
                                               "agents.objective_settings.alignopsd.tau=0.8"]).agents)
    assert (objective.cfg.tau, objective.cfg.temperature, objective.needs) == (0.8, 0.5, ("teacher_logp", "thought"))
    with pytest.raises(ConfigError, match="alignopsd.tau"):
        load("wordmath", ['agents.actions="grpo"', "agents.objective=alignopsd", "agents.objective_settings.alignopsd.tau=1.5"])


def test_h2sd_scales_successes_by_the_teacher_and_pulls_failures_towards_it():
    # rows 0, 1 succeed (the teacher finds row 0's token e^2 likelier than row 1's); rows 2, 3 fail: the hinted
    # teacher likes row 2's token more than the agent did (+1), row 3's less (-3)
    b = batch([1.0, 1.0, -1.0, -1.0], [0, 1, 2, 3], teacher_logp=[[0.0], [-2.0], [0.0], [-4.0]])
    value, g, _ = grad("h2sd", b)
    w = [1 / ((1 + math.exp(-2)) / 2), math.exp(-2) / ((1 + math.exp(-2)) / 2)]
    # successes: -A w / 4 (the surrogate's mean runs over all 4 steps, failures weighted 0); failures: the
    # reverse-KL estimate's gradient (log pi - log q) / 2 per failed step
    assert g[:, 0].tolist() == pytest.approx([-w[0] / 4, -w[1] / 4, (-1 - 0) / 2, (-1 + 4) / 2])
    assert g[0, 0] < g[1, 0] < 0  # the success the teacher endorses rises more
    assert g[2, 0] < 0 < g[3, 0]  # the failure's token the teacher likes rises; the one it disowns falls


def belief_batch(advantage, episode, before, after):
    b = batch(advantage, episode, teacher_logp=[[0.0]] * len(advantage))
    b.belief_before, b.belief_after = t(before), t(after)
    return b


def test_stop_segment_credits_commitments_toward_the_gold_answer_and_charges_redundant_rechecks():
    # one group: a success whose steps move the belief by [+1, 0 (a re-check), +0.5], a failure's one step by -1;
    # u = [1, -0.1, 0.5, -1], centred on the group's mean 0.1; A' = A + u - 0.1
    b = belief_batch([1.0, 1.0, 1.0, -1.0], [0, 0, 0, 1], [-3.0, -2.0, -2.0, -2.0], [-2.0, -2.0, -1.5, -3.0])
    _, g, _ = grad("stop_segment", b)
    shaped = [1.9, 0.8, 1.4, -2.1]
    assert g[:, 0].tolist() == pytest.approx([-a / 4 for a in shaped])
    assert g[1, 0] > g[2, 0] > g[0, 0]  # the re-check gains least of the success; the first commitment most


def test_rredcot_gives_a_failures_penalty_to_the_segment_that_lowered_the_belief():
    # success: Delta [+1, 0, +0.5] -> w = 0.5 + 0.5 x [2, 0, 1]; failure: Delta [+0.2, -0.8] -> w = 0.5 + 0.5 x [0, 2]
    b = belief_batch([1.0, 1.0, 1.0, -1.0, -1.0], [0, 0, 0, 1, 1], [-3.0, -2.0, -2.0, -2.0, -1.8],
                     [-2.0, -2.0, -1.5, -1.8, -2.6])
    _, g, _ = grad("rredcot", b)
    w = [1.5, 0.5, 1.0, 0.5, 1.5]
    assert g[:, 0].tolist() == pytest.approx([-a * x / 5 for a, x in zip([1, 1, 1, -1, -1], w)])
    assert g[4, 0] > g[3, 0] > 0  # the failure's belief-lowering step is pushed down three times as hard


A, B, C = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]  # three steps' embeddings, cosine 0 between them


def test_alignopsd_matches_turns_by_what_they_say_not_by_their_index():
    # a success takes steps [a, b], a failure [b, a]; the teacher's gap g: success [+1, 0], failure [0, -1].
    # Matched by embedding, the success's a (+1) faces the failure's a (-1): c = [2, 0] and [0, -2]; by index every
    # contrast would be 1 (and the weights uniform). Each turn is its own span (disjoint profiles: JSD = ln 2);
    # z = sign(A) c / T = [4, 0] and [0, 4]; w = 2 u / sum u per episode
    b = batch([1.0, 1.0, -1.0, -1.0], [0, 0, 1, 1], teacher_logp=[[0.0], [-1.0], [-1.0], [-2.0]])
    b.thought = t([A, B, B, A])
    _, g, stats = grad("alignopsd", b)
    w = [2 / (1 + math.exp(-4)), 2 * math.exp(-4) / (1 + math.exp(-4))]
    assert g[:, 0].tolist() == pytest.approx([-w[0] / 4, -w[1] / 4, w[1] / 4, w[0] / 4])
    assert g[0, 0] < g[1, 0] < 0 < g[2, 0] < g[3, 0]  # the success's a rises most, the failure's a falls most
    assert stats["matched"] == 1.0 and stats["spans"] == 4.0
    # both rollouts in the same order (the failure's a now first): index and embedding agree, the weights follow a
    b = batch([1.0, 1.0, -1.0, -1.0], [0, 0, 1, 1], teacher_logp=[[0.0], [-1.0], [-2.0], [-1.0]])
    b.thought = t([A, B, A, B])
    assert grad("alignopsd", b)[1][:, 0].tolist() == pytest.approx([-w[0] / 4, -w[1] / 4, w[0] / 4, w[1] / 4])


def test_alignopsd_turns_that_match_the_same_sibling_step_form_one_span_and_share_its_weight():
    # a success says a, then c twice (one step spread over two turns); a failure a, c. The success's two c turns
    # have the same profile (the failure's c: JSD 0), one span: contrast mean (2 + 0) / 2 = 1 for both, z = 2.
    # The failure's c faces both (p = 1/2 each): c = 0 - (2 + 0) / 2 = -1, z = -1 x -1 / 0.5 = 2; a's contrast is 0
    b = batch([1.0, 1.0, 1.0, -1.0, -1.0], [0, 0, 0, 1, 1], teacher_logp=[[-1.0], [1.0], [-1.0], [-1.0], [-1.0]])
    b.thought = t([A, C, C, A, C])
    _, g, stats = grad("alignopsd", b)
    e2 = math.exp(2)
    w = [3 / (1 + 2 * e2), 3 * e2 / (1 + 2 * e2), 3 * e2 / (1 + 2 * e2), 2 / (1 + e2), 2 * e2 / (1 + e2)]
    assert g[:, 0].tolist() == pytest.approx([-w[0] / 5, -w[1] / 5, -w[2] / 5, w[3] / 5, w[4] / 5])
    assert g[1, 0] == g[2, 0] < g[0, 0] < 0 and stats["spans"] == 4.0
    # the failure's turns say something else (cosine 0 < tau): nothing matches, every profile is "unmatched", each
    # episode one span whose turns share one weight: grpo's even spread, whatever the gaps
    b = batch([1.0, 1.0, 1.0, -1.0, -1.0], [0, 0, 0, 1, 1], teacher_logp=[[-1.0], [1.0], [-1.0], [-1.0], [-1.0]])
    b.thought = t([A, C, C, B, B])
    _, g, stats = grad("alignopsd", b)
    assert g[:, 0].tolist() == pytest.approx([-1 / 5] * 3 + [1 / 5] * 2) and stats["matched"] == 0.0


def test_alignopsd_default_threshold_on_the_shipped_embedder_matches_one_problems_steps_by_kind():
    """What the LoRA learner gives as ``thought`` (the frozen MiniLM, agents/learners/bid_head.py): at tau = 0.75 two
    rollouts' expressions for one wordmath problem match, in either order of the operands, and an expression
    never matches an answer."""
    from agents.learners.bid_head import MiniLM

    e = torch.as_tensor(MiniLM()(["(12 + 7) * 3", "(7 + 12) * 3", "12 * 3 + 7", "57", "Answer: 57"]), dtype=torch.float64)
    sim, tau = e @ e.T, O.make("alignopsd").cfg.tau
    assert sim[0, 1] >= tau and sim[0, 2] >= tau and sim[3, 4] >= tau
    assert bool((sim[:3, 3:] < tau).all())


def test_distil_raises_the_verified_teacher_samples_tokens_and_ignores_an_unverified_one():
    # four failed steps; the teacher (the policy with the correct output in context) wrote a sample for three:
    # row 0's two tokens (log-probs -2, -1 under the agent's own prompt) and row 3's one token (-0.5) verified,
    # row 1's sample (-3) rejected by the world, row 2 none. CE = mean over verified of -mean_t = (1.5 + 0.5) / 2
    b = batch([-1.0] * 4, [0, 1, 2, 3], teacher_logp=[[0.0]] * 4)
    b.teacher_sample_logp = t([[-2.0, -1.0], [0.0, -3.0], [0.0, 0.0], [0.0, -0.5]]).requires_grad_()
    b.teacher_sample_mask = t([[True, True], [False, True], [False, False], [False, True]], torch.bool)
    b.teacher_verified = t([True, False, False, True], torch.bool)
    value, g, stats = grad("distil", b)
    assert value == pytest.approx(1.0 + 1.0)  # grpo's -mean A (on-policy) + beta x CE
    sample = b.teacher_sample_logp.grad
    # descent raises each verified token: row 0's two share its half, row 3's one token has the other half
    assert sample.flatten().tolist() == pytest.approx([-0.25, -0.25, 0.0, 0.0, 0.0, 0.0, 0.0, -0.5])
    assert g[:, 0].tolist() == pytest.approx([0.25] * 4)  # the agent's own tokens: grpo's gradient alone
    assert (stats["teacher_samples"], stats["teacher_verified"]) == (3.0, 2.0)
    b.teacher_verified = t([False] * 4, torch.bool)  # nothing verified: grpo alone, the samples untouched
    b.teacher_sample_logp.grad = None
    assert grad("distil", b)[0] == pytest.approx(1.0) and b.teacher_sample_logp.grad is None


def test_hint_sd_distils_the_located_failing_step_alone():
    # a failed episode of three one-token steps and a success; the world located step 1 (its reply is not what the
    # correct output does); the hinted EMA teacher disagrees with the agent at every step (-5, -3, 0, -4 vs -1)
    b = batch([-1.0, -1.0, -1.0, 1.0], [0, 0, 0, 1], hint_logp=[[-5.0], [-3.0], [0.0], [-4.0]])
    b.located = t([False, True, False, False], torch.bool)
    value, g, stats = grad("hint_sd", b)
    # grpo: -A / 4 per step; the located step adds its reverse-KL gradient (log pi - log q) = -1 + 3 = 2
    assert g[:, 0].tolist() == pytest.approx([0.25, 0.25 + 2.0, 0.25, -0.25])
    assert stats["located"] == 1.0 and stats["hint_reverse_kl"] == pytest.approx(2.0)
    # without the locator's verdict nothing is distilled: grpo's gradient on every step, whatever the teacher says
    b.located = t([False] * 4, torch.bool)
    b.logp.grad = None
    assert grad("hint_sd", b)[1][:, 0].tolist() == pytest.approx([0.25, 0.25, 0.25, -0.25])
    # a located step whose token the teacher likes more than the agent did is raised instead
    b = batch([-1.0, 1.0], [0, 1], hint_logp=[[0.5], [-1.0]])
    b.located = t([True, False], torch.bool)
    assert grad("hint_sd", b)[1][0, 0] == pytest.approx(0.5 - 1.5)


def evidence_case(**settings):
    """Five one-token steps (log-probs -1, on-policy). Episode 0 failed: step 0 raised the gold score's belief and is
    grounded, step 1 lowered it (the planted faulty step), step 2 raised it but quotes what it never read (grounding
    0.5); episode 1 succeeded with an ungrounded step 3 that lowered the belief; episode 2 failed with a grounded step
    4 that raised it. Rewrites (two tokens) for the failed episodes' steps: step 1's grounded (log-probs -2, -1),
    step 2's ungrounded, steps 0 and 4's grounded."""
    b = batch([-1.0, -1.0, -1.0, 1.0, -1.0], [0, 0, 0, 1, 2], teacher_logp=[[0.0]] * 5)
    b.teacher_logp = None
    b.belief_before, b.belief_after = t([-2.0, -1.5, -2.3, -1.0, -1.0]), t([-1.5, -2.3, -2.1, -1.4, -0.7])
    b.grounding = t([1.0, 1.0, 0.5, 0.5, 1.0])
    b.rubric_sample_logp = t([[-1.0, -1.0], [-2.0, -1.0], [-3.0, -3.0], [0.0, 0.0], [-1.0, -1.0]]).requires_grad_()
    b.rubric_sample_mask = t([[True, True]] * 3 + [[False, False], [True, True]], torch.bool)
    b.rubric_sample_grounding = t([1.0, 1.0, 0.5, 0.0, 1.0])
    return b


def test_evidence_diagnosis_locates_a_failures_drifting_or_ungrounded_steps_and_nothing_else():
    from agents.objectives.evidence_diagnosis import Config, locate

    # drift d = [0.5, -0.8, 0.2, -0.4, 0.3]: step 1 (d < 0) and step 2 (grounding 0.5 < 1) of the failure; not step 0
    # (raised it, grounded), not the success's step 3 (lowered it, ungrounded), not step 4 (raised it, grounded)
    assert locate(evidence_case(), Config()).tolist() == [False, True, True, False, False]
    assert locate(evidence_case(), Config(threshold=0.4)).tolist() == [False, True, False, False, False]


def test_evidence_diagnosis_penalty_lowers_exactly_the_harmful_steps_advantage():
    from agents.objectives.evidence_diagnosis import Config, penalised

    # A' = A - lam x max(-d, 0): steps 1 (d = -0.8) and 3 (d = -0.4, a success's: harmful drift is penalised anywhere)
    assert penalised(evidence_case(), Config(lam=0.5)).tolist() == pytest.approx([-1.0, -1.4, -1.0, 0.8, -1.0])
    b = evidence_case()
    _, g, _ = grad("evidence_diagnosis", b, beta=0.0)  # the surrogate alone: d/dlogp = -A' / M on-policy
    _, plain, _ = grad("grpo", evidence_case())
    assert g[:, 0].tolist() == pytest.approx([0.2, 0.36, 0.2, -0.12, 0.2])
    assert (g[:, 0] != plain[:, 0]).tolist() == [False, True, False, True, False]  # grpo's: [0.2, 0.2, 0.2, -0.2, 0.2]


def test_evidence_diagnosis_trains_on_the_located_steps_grounded_rewrites_alone():
    b = evidence_case()
    value, g, stats = grad("evidence_diagnosis", b)
    # surrogate -mean A' = (1 + 1.8 + 1 - 0.6 + 1) / 5 = 0.84; cross-entropy on step 1's rewrite alone (step 2's is
    # ungrounded, steps 0 and 4 not located): -mean(-2, -1) = 1.5
    assert value == pytest.approx(0.84 + 1.5)
    assert b.rubric_sample_logp.grad.flatten().tolist() == pytest.approx([0, 0, -0.5, -0.5, 0, 0, 0, 0, 0, 0])
    assert stats["located"] == 2.0 and stats["rubric_samples"] == 4.0 and stats["rewrites"] == 1.0
    assert stats["mean_drift"] == pytest.approx(-0.04) and stats["harmful_drift"] == 2.0 and stats["ungrounded"] == 2.0
    assert stats["rewrite_nll"] == pytest.approx(1.5)
