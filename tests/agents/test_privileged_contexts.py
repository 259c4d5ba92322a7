"""The LM learner's privileged prompts (agents/llm/privileged_pass.py), by hand: which context each signal gets, which
failed sibling a step is contrasted with, and one forced call for all of them (a recording engine, no model)."""

import numpy as np

from agents.backends.base import Prompt, Stats
from agents.llm.privileged_pass import REFERENCE, contexts, failed_replies, located, score, verified

P = [Prompt("sys", "", f"state {i}") for i in range(4)]
TEXTS = ["I offer $50", "I offer $70", "I offer $60", "I offer $90"]
WORLDS, ROLES = [0, 1, 2, 3], ["negotiator"] * 4
SOLVED = np.array([True, False, True, True])  # one group of 4: world 1 failed


def test_each_signal_gets_its_context_and_a_failed_sibling_is_the_contrast():
    failed = failed_replies([[(1, 7, None, type("Done", (), {"text": "I offer $99"})(), None)]],
                            lambda row: "negotiator", SOLVED)
    assert failed == {(1, "negotiator"): "I offer $99"}
    every = ("teacher_logp", "sibling_logp", "hindsight_logp", "belief_before", "belief_after")
    got = contexts(every, P, TEXTS, WORLDS, ROLES, SOLVED, 4, lessons=["I offer $40"] * 4, failed=failed,
                   gold=["A deal at $40."] * 4)
    assert got["teacher_logp"][0] == (Prompt("sys", "", "state 0" + REFERENCE.format(answer="I offer $40")), TEXTS[0])
    assert got["sibling_logp"][0][0].user.endswith("I offer $99)")  # world 0's failed sibling is world 1
    assert got["sibling_logp"][1] == got["teacher_logp"][1]  # world 1 has no failed sibling but itself: no contrast
    assert "it succeeded" in got["hindsight_logp"][0][0].user and "it failed" in got["hindsight_logp"][1][0].user
    assert got["belief_before"][2] == (P[2], "A deal at $40.")
    assert got["belief_after"][2][0].user.endswith("I offer $60)") and got["belief_after"][2][1] == "A deal at $40."
    assert set(contexts(("hindsight_logp",), P, TEXTS, WORLDS, ROLES, SOLVED, 4)) == {"hindsight_logp"}


def test_one_forced_call_scores_every_distinct_pair_and_beliefs_are_per_step_means():
    class Recorder:
        stats, calls = Stats(), []

        def forced(self, prompts, completions):
            self.calls.append(len(prompts))
            self.stats.privileged_tokens += 10 * len(prompts)
            return [np.arange(1.0, len(c.split()) + 1) for c in completions]

    engine = Recorder()
    wanted = {"teacher_logp": [(P[0], "a b"), (P[0], "a b")], "belief_before": [(P[1], "x y z"), (P[0], "a b")]}
    out, spent = score(engine, wanted)
    assert engine.calls == [2] and spent == 20  # (P0, "a b") once, (P1, "x y z") once, in one call
    assert [list(r) for r in out["teacher_logp"]] == [[1.0, 2.0], [1.0, 2.0]]
    assert out["belief_before"].tolist() == [2.0, 1.5]


def test_the_ema_teachers_context_is_the_teachers_and_a_privileged_generate_is_the_learners_cost():
    got = contexts(("hint_logp",), P, TEXTS, WORLDS, ROLES, SOLVED, 4, lessons=["I offer $40"] * 4)
    assert set(got) == {"hint_logp"} and got["hint_logp"][1] == (Prompt("sys", "", "state 1" + REFERENCE.format(
        answer="I offer $40")), TEXTS[1])
    stats = Stats(prompts=2, prompt_tokens=100, completion_tokens=10, seconds=1.0, calls=2, prefill_tokens=90)
    with stats.privileged():  # what a generate call counts, moved to the learner's counters
        stats.prompts, stats.prompt_tokens, stats.completion_tokens = 5, 130, 14
        stats.seconds, stats.calls, stats.prefill_tokens = 1.5, 3, 120
    assert (stats.prompts, stats.prompt_tokens, stats.completion_tokens, stats.seconds, stats.calls,
            stats.prefill_tokens) == (2, 100, 10, 1.0, 2, 90)
    assert stats.privileged_tokens == 34 and stats.privileged_s == 0.5


def test_the_world_verifies_a_reply_by_what_it_does_and_locates_a_failed_episodes_wrong_step():
    from scenarios.text.adapter import TextBatch, TextBoard
    from scenarios import wordmath

    board = TextBoard(wordmath.Wordmath())
    world = TextBatch(board, seed=0, horizon=8, fixed=np.array([3, 3]))
    world.reset(2, np.random.default_rng(0))
    obs = world.observe()
    problem = world.states[0]["problem"]
    right, wrong = problem.expression, " + ".join(sorted(problem.numbers))  # 35 / 5 + 7 and 35 + 5 + 7
    assert wrong != right
    assert board.verify("extractor", right, obs[0]) and board.verify("extractor", f" {right}\n", obs[0])
    assert not board.verify("extractor", wrong, obs[0]) and not board.verify("extractor", "no idea", obs[0])
    roles, seen = ["extractor"] * 3, [obs[0], obs[0], obs[1]]
    # world 0 failed, world 1 succeeded: only world 0's wrong reply is located
    assert located(board.verify, [right, wrong, wrong], roles, seen, [True, True, False]).tolist() == [False, True, False]
    assert verified(board.verify, [right, None, wrong], roles, seen).tolist() == [True, False, False]
