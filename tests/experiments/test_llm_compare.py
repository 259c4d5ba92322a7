"""wordmath's arms against the complete agent: every arm is a valid config that sets what it names, the table
pairs each arm with the complete agent of the same seed, and one toy run goes through end to end."""

import json
import sqlite3

import numpy as np
import pytest

from experiments import llm_compare
from scenarios.run.config import load


NAMED = {  # arm -> (bid scheme, policy actions, skill credit, diagnoser): what its name promises
    "fixed": ("fixed", "rule", "none", "rule"), "fixed_with_eps": ("fixed_with_eps", "rule", "none", "rule"),
    "holland": ("holland", "rule", "none", "rule"), "learned": ("learned", "rule", "none", "rule"),
    "holland+grpo": ("holland", "grpo", "none", "rule"), "learned+grpo": ("learned", "grpo", "none", "rule"),
    "holland+grse": ("holland", "rule", "grse", "llm"), "flagship": ("learned", "grpo", "grse", "llm"),
    "learned@softmax": ("learned", "rule", "none", "rule"),
}


@pytest.mark.parametrize("arm", list(llm_compare.ARMS))
def test_every_arm_is_a_valid_wordmath_config_that_sets_what_it_names(arm):
    exp = load(llm_compare.SCENARIO.get(arm, "wordmath"), llm_compare.ARMS[arm], seed=3)
    assert exp.run.scenario == "wordmath" and exp.run.seed == 3
    assert (exp.market.bid_scheme, exp.agents.actions, exp.skills.credit, exp.skills.diagnoser) == NAMED[arm]
    assert exp.market.clearing == ("softmax" if arm.endswith("@softmax") else "first_price")  # as the README measured


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


def test_edits_table_has_a_row_per_arm_with_edit_passes_and_a_cell_per_seed():
    counts = {"skill_edits_proposed": 6, "skill_edits_accepted": 4, "skill_edits_rejected": 2, "diagnoses_llm": 5,
              "diagnoses_fallback": 1, "edit_passes": 6, "skill_pass_seconds": 300.0}
    rows = [row("holland", 0, 0.3, 0.4), {**row("flagship", 1, 0.2, 0.4), **counts, "heldout_accuracy_initial": 0.25},
            {**row("flagship", 0, 0.1, 0.4), **counts, "skill_edits_accepted": 6, "skill_edits_rejected": 0}]
    text = llm_compare.edits_table(rows).splitlines()
    assert len(text) == 3 and text[2] == "| flagship | -; 0.250 | 6 / 6 / 0; 6 / 4 / 2 | 5 / 1; 5 / 1 | 50; 50 |"


@pytest.mark.slow
def test_llm_compare_quick_runs_arms_and_reports_from_its_log(tmp_path, capsys):
    """holland alone and the flagship (every mechanism on), at toy size: two real runs of SmolLM2."""
    out = tmp_path / "llm.md"
    sets = ["--quick", "--arms", "holland", "flagship", "--seeds", "1", "--workers", "2", "--out", str(out),
            "--keep", str(tmp_path / "db")]
    assert llm_compare.main(sets) == 0
    runs = {r["arm"]: r for r in map(json.loads, out.with_suffix(".jsonl").read_text().splitlines())}
    assert runs["holland"]["policy_updates"] == 0 and "edit_passes" not in runs["holland"]
    # the flagship's edit passes ran on their probes; whether its LoRA learner updates at this size depends on its
    # one group a round scoring unequally (the learner's updates: tests/agents/test_lm_grpo.py)
    assert runs["flagship"]["edit_passes"] == 2
    for run in runs.values():
        assert 0 <= run["heldout_accuracy"] <= 1 and len(run["ledger_hash"]) == 64
        assert run["complete_agent_accuracy"] == runs["holland"]["complete_agent_accuracy"]  # greedy, same problems
    capsys.readouterr()
    assert llm_compare.main(["--report", "--out", str(out), "--keep", str(tmp_path / "db"),
                             "--rows", str(tmp_path / "llm.jsonl")]) == 0  # from the log
    printed = capsys.readouterr().out.splitlines()
    report = out.read_text()
    assert "\n".join(printed[:-1]) == report.strip() and "| market, holland |" in report
    assert "| holland | " in report and "| flagship | " in report  # the trace table's rows
    assert llm_compare.edits_table(list(runs.values())).splitlines()[2].startswith("| flagship | ")
    assert llm_compare.edits_table(list(runs.values())) in report
    stored = {name: [json.loads(line) for line in (tmp_path / f"{name}.jsonl").read_text().splitlines()]
              for name in ("llm", "llm_trace", "llm_edits")}  # the docs' rows, a file a table
    assert all(rows and all(r["command"].startswith("python -m experiments.llm_compare") for r in rows)
               for rows in stored.values())
    summary = json.loads(printed[-1])
    assert summary == {**summary, **llm_compare.best_arm(list(runs.values()))}  # the best arm of these two runs
    trace = summary["rows"][0]["trace"]
    assert 0 <= trace["expression"] <= 1 and 0 <= trace["solved_given_expression"] <= 1
