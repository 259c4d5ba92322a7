"""wordmath's arms against the complete agent: every arm is a valid config that sets what it names, the table
pairs each arm with the complete agent of the same seed, and one toy run goes through end to end."""

import json

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


@pytest.mark.slow
def test_llm_compare_quick_runs_an_arm_and_reports_from_its_log(tmp_path, capsys):
    out = tmp_path / "llm.md"
    assert llm_compare.main(["--quick", "--arms", "holland", "--seeds", "0", "--workers", "1", "--out", str(out)]) == 0
    [run] = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines()]
    assert run["arm"] == "holland" and run["policy_updates"] == 0 and 0 <= run["heldout_accuracy"] <= 1
    assert 0 <= run["complete_agent_accuracy"] <= 1 and len(run["ledger_hash"]) == 64
    capsys.readouterr()
    assert llm_compare.main(["--report", "--out", str(out)]) == 0  # the table again, from the log alone
    printed = capsys.readouterr().out.splitlines()
    assert "\n".join(printed[:-1]) == out.read_text().strip() and "| market, holland |" in out.read_text()
    assert json.loads(printed[-1])["best_arm"] == "holland"
