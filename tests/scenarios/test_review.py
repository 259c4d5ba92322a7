"""The review world (scenarios/review.py): a record's evidence quoted, then scored against three rules; its gold score,
its rubric, and a round of the LoRA learner under ``evidence_diagnosis`` with a scripted stand-in for the sampling."""

import re
import zlib

import numpy as np
import pytest

from agents.learners import lm_grpo
from scenarios.text import scenario as text_scenario
from scenarios.text.adapter import TextBatch, TextBoard
from scenarios import build_model, load
from scenarios import review as R
from scenarios.registry import get_scenario
from scenarios.wordmath import Wordmath
from tests.scenarios.scripted_backend import ScriptedBackend


def test_the_gold_score_counts_the_rules_the_record_passes():
    world = R.Review()
    # seed 0: price=86, warranty=1, weight=7 against "price at least 92; warranty at least 2; weight above 15": none
    # seed 1: price=52, warranty=3, weight=1 against "price above 48; warranty below 3; weight below 9": the 1st and 3rd
    for seed, policy, gold in [(0, "price at least 92; warranty at least 2; weight above 15", 0),
                               (1, "price above 48; warranty below 3; weight below 9", 2)]:
        state = world.start(world.problem(np.random.default_rng(seed)))
        assert world.problem(np.random.default_rng(seed)) == state["problem"]
        assert world.policy(state) == policy and world.gold(state) == gold
        assert world.correct(state, None) == world.correct(state, "scorer") == f"score: {gold}"
    assert world.correct(state, "reader") == "evidence: price=52, warranty=3, weight=1"
    assert world.read(state, "reader") == ("Record: price=52, rating=3, stock=30, warranty=3, weight=1. "
                                           "Policy: price above 48; warranty below 3; weight below 9.")


def test_the_scorer_sees_the_quoted_evidence_not_the_record_so_a_misquote_misleads_it():
    world = R.Review()
    state = world.start(world.problem(np.random.default_rng(1)))  # gold 2
    assert world.may_act(state, "reader") and not world.may_act(state, "scorer")
    assert world.act(state, "reader", "the price is 52") == "expected 'evidence: <attribute>=<value>, ...'"
    assert world.act(state, "reader", "evidence: price=52, warranty=3, weight=10") is None  # weight misquoted
    assert world.read(state, "scorer") == "Policy: price above 48; warranty below 3; weight below 9. " \
                                          "Evidence: price=52, warranty=3, weight=10"
    assert world.may_act(state, "scorer") and world.stage(state) == 1
    assert world.act(state, "scorer", "score: 4") == "expected 'score: <0 to 3>'"
    assert world.act(state, "scorer", "score: 1") is None  # what the misquoted evidence passes
    assert world.done(state) and world.reward(state) == 0.0 and not world.may_act(state, "scorer")


def test_the_rubric_says_what_a_good_step_does_not_the_answer_and_the_framework_sees_it():
    world = R.Review()
    states = [world.start(world.problem(np.random.default_rng(s))) for s in range(2)]
    for role in ("reader", "scorer"):
        rubric = world.rubric(states[0], role)
        assert rubric == world.rubric(states[1], role) and not re.search(r"\d", rubric)  # criteria, no value, no score
    assert R.Review.has_rubric() and not Wordmath.has_rubric()
    assert get_scenario("review").spec.rubric and not get_scenario("wordmath").spec.rubric
    board = TextBoard(world)
    batch = TextBatch(board, seed=7, horizon=4)
    row = batch.observe()[0]
    question, gold = board.question(row)  # the answer the belief scores
    assert gold == world.correct(batch.states[0], None) and question == f"7:{row[2]}"
    assert board.rubric(row, "reader") == world.rubric(batch.states[0], "reader")


def test_evidence_diagnosis_loads_on_review_and_a_world_without_a_rubric_refuses_it_naming_it():
    from scenarios.run.config import ConfigError

    sets = ["agents.actions=grpo", "agents.objective=evidence_diagnosis"]
    assert load("review", sets).agents.objective == "evidence_diagnosis"
    with pytest.raises(ConfigError, match=r"'evidence_diagnosis'.*rubric_sample.*writes no rubric") as err:
        load("wordmath", sets)
    assert "\n" not in str(err.value)


class Scripted(ScriptedBackend):
    """The reader quotes the record's value of each rule's attribute but, for one prompt in three (by a hash of it),
    quotes an attribute the record does not have (``colour=777``: no rule passes), never with the rubric in its
    prompt; the scorer counts the rules the quoted evidence passes. Its forced pass scores the gold answer's belief:
    -1 before a reply, -2 after a slip, -0.5 after any other reply."""

    def answer(self, p) -> str:
        rules = re.findall(r"(\w+) (below|at least|above) (\d+)", p.user)
        if p.system.startswith("Quote"):
            record = dict(re.findall(r"(\w+)=(\d+)", p.user.split("Policy:")[0]))
            slip = "What a good reply" not in p.user and zlib.crc32(f"{p.user}|{p.seed}".encode()) % 3 == 0
            return "evidence: colour=777" if slip else "evidence: " + ", ".join(f"{a}={record[a]}" for a, _, _ in rules)
        quoted = {a: int(v) for a, v in re.findall(r"(\w+)=(\d+)", p.user.split("Evidence:")[1])}
        return f"score: {sum(a in quoted and R.passes(op, quoted[a], int(b)) for a, op, b in rules)}"

    def forced(self, prompts, completions):
        out = []
        for p, c in zip(prompts, completions):
            reply = p.user.partition("(Reply so far: ")[2]
            out.append(np.full(3, -1.0 if not reply else -2.0 if "777" in reply else -0.5))
        return out


@pytest.fixture(scope="module")
def smollm2():
    from agents.backends import BackendConfig
    from agents.backends.factory import make_backend

    return make_backend(BackendConfig(backend="hf", device="cpu", dtype="float32"))


def test_a_lora_round_runs_evidence_diagnosis_on_the_worlds_signals(monkeypatch, smollm2):
    """The market samples through the scripted stand-in (it answers, and scores the belief); the LoRA update is
    SmolLM2's own: the learner measures each reply's grounding, has the failed steps rewritten with the rubric in
    context, and the objective locates the slips that failed (ungrounded, belief lowered) and trains on the rewrites."""
    scripted = Scripted()
    scripted.cfg, scripted.model, scripted.tokenizer = smollm2.cfg, smollm2.model, smollm2.tokenizer
    scripted.weights_changed = lambda: None
    monkeypatch.setattr(text_scenario, "shared_backend", lambda cfg: scripted)
    monkeypatch.setattr(lm_grpo, "make_backend", lambda cfg: scripted)
    exp = load("review", ["agents.actions=grpo", "agents.objective=evidence_diagnosis", "market.batch=4",
                          "agents.group=4", "review.heldout=1", "run.episodes=4",
                          "review.policy.theta_high=-0.5"], seed=7)  # every agent wakes on the stand-in's flat scores
    model = build_model(exp)
    try:
        model.step()
        stats, steps = model.policy.stats, model.policy.action_learner.counts
        failed = (~model.trace.solved).sum()
        assert 0 < failed < 4 and steps["policy_updates"] == 1
        assert np.isfinite(stats["policy_loss"]) and np.isfinite(stats["grad_norm"]) and stats["grad_norm"] > 0
        # a rollout fails where its reader slipped on a problem whose gold score is not 0: that step is located (its
        # rewrite, written with the rubric, grounded, is trained on); the scorer's count after it raised the belief
        # and claims nothing about its input (its range is in its frozen prompt): not located. Every slip, failed or
        # not, is ungrounded and lowered the belief
        assert stats["located"] == failed and stats["rubric_samples"] == 2 * failed and stats["rewrites"] == failed
        assert stats["harmful_drift"] == stats["ungrounded"] >= failed and stats["rewrite_nll"] > 0
        assert stats["mean_drift"] == pytest.approx((0.5 * (8 - stats["harmful_drift"]) - stats["harmful_drift"]) / 8)
    finally:
        model.policy.action_learner.grpo.model.unload()
