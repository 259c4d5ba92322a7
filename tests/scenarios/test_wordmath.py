"""Scenario ``wordmath``: exact problems, the world's transitions, and the whole run from the CLI."""

import json
import sqlite3
import subprocess
import sys

import numpy as np
import pytest

from agents.llm import parse
from scenarios.text.adapter import TextBatch, TextBoard
from scenarios import wordmath
from scenarios.run.config import load


def test_problems_are_exact_deterministic_and_held_out_by_seed():
    for pid in range(300):
        p = wordmath.problem(0, pid)
        assert parse.evaluate(p.expression) == p.answer and p.answer >= 0
        assert all(n in p.text for n in p.numbers)
        assert wordmath.problem(0, pid) == p
    train = {wordmath.problem(0, int(i)).text for i in np.random.default_rng(1).integers(2**31, size=2000)}
    heldout = [wordmath.problem(10_000, i).text for i in range(64)]
    assert len(set(heldout)) == 64 and sum(t in train for t in heldout) <= 2  # distinct streams (templates may collide)


def test_world_moves_text_to_expression_to_value_to_answer():
    board = TextBoard(wordmath.Wordmath())
    world = TextBatch(board, seed=0, horizon=8, fixed=np.array([3, 4]))
    world.reset(2, np.random.default_rng(0))
    obs = world.observe()
    assert board.summaries(obs) == [wordmath.SUMMARIES[0]] * 2
    problem = world.states[0]["problem"]
    assert problem == wordmath.problem(0, 3)
    payload, reason = board.parse("extractor", problem.expression, obs[0])
    assert payload == problem.expression and not reason
    assert board.parse("extractor", "12345 + 99999", obs[1])[0] is None  # numbers not in the problem: refused
    board.deliver([payload, None])
    reward, done = world.step(np.array([0, -1]), np.array([True, False]))
    assert [world.board.world.stage(s) for s in world.states] == [1, 0] and not done.any()
    obs = world.observe()
    assert board.illegal("extractor", obs[0]) and not board.illegal("extractor", obs[1])
    assert board.illegal("answerer", obs[0]) and not board.illegal("generalist", obs[0])
    assert board.tool("calculator", obs[1])[0] is None  # nothing to compute yet
    board.deliver([board.tool("calculator", obs[0])[0], None])
    world.step(np.array([1, -1]), np.array([True, False]))
    obs = world.observe()
    assert world.states[0]["value"] == problem.answer and "Value: " in board.context(obs[0], "answerer")
    board.deliver([board.parse("answerer", f"The answer is {problem.answer}.", obs[0])[0], None])
    reward, done = world.step(np.array([2, -1]), np.array([True, False]))
    assert done.tolist() == [True, False] and reward.tolist() == [1.0, 0.0] and world.solved.tolist() == [True, False]
    assert board.lesson(obs[0], "answerer") == (f"Problem: {problem.text}", f"The answer is {problem.answer}.")


def test_config_names_bad_keys():
    from scenarios.run.config import ConfigError

    with pytest.raises(ConfigError, match="wordmath.llm.backend"):
        load("wordmath", ["wordmath.llm.backend=tpu"])
    assert load("wordmath", ["wordmath.llm.dtype=float32"]).scenario.llm.dtype == "float32"


@pytest.mark.slow
@pytest.mark.parametrize("bids", [[], ["market.bid_scheme=learned", "agents.actions=grpo", "agents.kl=0.05", "run.episodes=4",
                                      "market.batch=4", "wordmath.heldout=4"]],
                         ids=["holland", "learned-value-bids+lora-grpo"])
def test_catallax_run_wordmath_reports_market_and_single_agent_accuracy(tmp_path, bids):
    """The LoRA variant is smaller (one round of one problem x 4 rollouts, 4 held-out problems): its update trains
    on whole prompts, about 60 tokens a second on 2 cores."""
    sets = ["run.episodes=16", "market.batch=8", "wordmath.heldout=8", *bids]
    cmd = [sys.executable, "-m", "scenarios.cli.main", "run", "wordmath", "--json", "--out", str(tmp_path),
           *[x for kv in sets for x in ("--set", kv)]]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["scenario"] == "wordmath" and summary["conservation_ok"] and summary["episodes"] == (4 if bids else 16)
    assert 0 <= summary["heldout_accuracy"] <= 1 and 0 <= summary["single_agent_accuracy"] <= 1
    assert 0 <= summary["complete_agent_accuracy"] <= 1 and 0 <= summary["complete_agent_whole_pool_accuracy"] <= 1
    assert summary["heldout_problems"] == (4 if bids else 8) and summary["actions"] > 0 and summary["backend"] == "hf"
    assert summary["llm_tokens"] > 0
    with sqlite3.connect(tmp_path / "catallax.db") as db:  # compute is charged (wordmath.toml's token_price)
        tokens, = db.execute("SELECT sum(tokens) FROM agent").fetchone()
        charged, = db.execute("SELECT count(*) FROM transfer WHERE reason_name = 'COMPUTE'").fetchone()
    assert tokens > 0 and charged > 0
    if bids:  # the headline loop: value bids, and the LM's LoRA adapter trained from the market's rollouts
        # (the KL term puts every completion into the update, so the round updates whatever its outcomes)
        assert summary["policy_updates"] == 1 and summary["lm_completions_trained"] > 0
        assert summary["lm_train_tokens"] > summary["lm_completions_trained"]
