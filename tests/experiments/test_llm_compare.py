"""wordmath's arms against the complete agent: every arm is a valid config that sets what it names, the table
pairs each arm with the complete agent of the same seed, and one toy run goes through end to end."""

import json
import sqlite3

import numpy as np
import pytest

from experiments import llm_compare
from scenarios.run.config import load


@pytest.mark.parametrize("arm", list(llm_compare.ARMS))
def test_every_arm_is_a_valid_wordmath_config_that_sets_what_it_names(arm):
    exp = load("wordmath", llm_compare.ARMS[arm], seed=3)
    bids, _, actions = arm.partition("+")
    assert exp.market.bid_scheme == bids and exp.agents.actions == (actions or "rule") and exp.run.seed == 3


def row(arm, seed, heldout, complete, single=0.03, updates=0):
    return {"arm": arm, "seed": seed, "heldout_accuracy": heldout, "complete_agent_accuracy": complete,
            "single_agent_accuracy": single, "train_success_rate": 0.2, "policy_updates": updates}


def test_table_pairs_each_arm_with_the_complete_agent_of_its_seed():
    rows = [row("holland", 0, 0.5, 0.4), row("holland", 1, 0.1, 0.4), row("learned+grpo", 0, 0.45, 0.4, updates=5),
            row("learned+grpo", 1, 0.3, 0.4, single=0.06, updates=4)]
    text = llm_compare.table(rows).splitlines()
    assert text[2].startswith("| complete agent") and "| 0.400 ± 0.000 | 0.400 0.400 |" in text[2]
    assert text[3] == (f"| market, holland | 0.300 ± {np.std([0.5, 0.1], ddof=1):.3f} | 0.500 0.100 | +0.100 -0.300 "
                       "| 0.20 |  |")
    assert "| 0.450 0.300 | +0.050 -0.100 | 0.20 | 5 4 |" in text[4]
    assert text[5].startswith("| best single agent") and "| 0.030 0.060 |" in text[5]  # best of either arm, per seed
    best = llm_compare.best_arm(rows)
    assert best["best_arm"] == "learned+grpo" and best["best_minus_complete"] == pytest.approx(-0.025)
    assert not best["beats_complete"]


def test_read_trace_splits_training_failures_into_no_expression_and_wrong_ones(tmp_path):
    """Three episodes: 0 extractor (holding a wrong example) -> calculator -> answerer, solved; 1 the same chain
    with a correct extractor, not solved; 2 a generalist alone. The tables are named as the store's views."""
    db = tmp_path / "run.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE agent (agent_id, skill)")
        con.execute("CREATE TABLE transfer (episode, src, reason_name)")
        con.execute("CREATE TABLE episode (episode, success)")
        wrong = "example: Kim ... => 4 + 3 + 2"
        con.executemany("INSERT INTO agent VALUES (?, ?)", [(1, f"extractor v0 theta=0.10: {wrong}"),
                        (2, "extractor v1 theta=0.00: example: Kim ... => 4 + 3 - 2"), (3, "calculator v2 theta=0.00: (no skills)"),
                        (4, "answerer v3 theta=0.00: (no skills)"), (5, "generalist v4 theta=0.00: (no skills)")])
        con.executemany("INSERT INTO transfer VALUES (?, ?, ?)", [(0, 1, "BID"), (0, 3, "BID"), (0, 4, "BID"), (0, 4, "RENT"),
                        (1, 2, "BID"), (1, 3, "BID"), (1, 4, "BID"), (2, 5, "BID")])
        con.executemany("INSERT INTO episode VALUES (?, ?)", [(0, 1), (1, 0), (2, 0)])
    assert llm_compare.read_trace(db) == {"expression": pytest.approx(2 / 3), "solved_given_expression": 0.5,
                                          "wrong_example_turns": 0.5}


@pytest.mark.slow
def test_llm_compare_quick_runs_an_arm_and_reports_from_its_log(tmp_path, capsys):
    out = tmp_path / "llm.md"
    sets = ["--quick", "--arms", "holland", "--seeds", "0", "--workers", "1", "--out", str(out), "--keep", str(tmp_path / "db")]
    assert llm_compare.main(sets) == 0
    [run] = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines()]
    assert run["arm"] == "holland" and run["policy_updates"] == 0 and 0 <= run["heldout_accuracy"] <= 1
    assert 0 <= run["complete_agent_accuracy"] <= 1 and len(run["ledger_hash"]) == 64
    capsys.readouterr()
    assert llm_compare.main(["--report", "--out", str(out), "--keep", str(tmp_path / "db")]) == 0  # from the log
    printed = capsys.readouterr().out.splitlines()
    assert "\n".join(printed[:-1]) == out.read_text().strip() and "| market, holland |" in out.read_text()
    summary = json.loads(printed[-1])
    assert summary["best_arm"] == "holland" and "| holland | " in out.read_text()  # its row of the trace table
    trace = summary["rows"][0]["trace"]
    assert 0 <= trace["expression"] <= 1 and 0 <= trace["solved_given_expression"] <= 1
