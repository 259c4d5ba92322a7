"""experiments/desk_compare.py: each arm is the desk config its name promises; the table pairs every arm with the
complete agent of the same seed; the planted lines an edit targeted are read from the run's own library."""

import json
import math
import sqlite3

import numpy as np
import pytest
from scipy import stats

from experiments import desk_compare
from scenarios.desk import HARMFUL, WRONG
from scenarios.run.config import load

NAMED = {  # arm -> (bid scheme, clearing, policy actions, skill credit, diagnoser)
    "fixed": ("fixed", "first_price", "rule", "none", "rule"),
    "holland": ("holland", "first_price", "rule", "none", "rule"),
    "learned": ("learned", "first_price", "rule", "none", "rule"),
    "learned+grpo": ("learned", "first_price", "grpo", "none", "rule"),
    "holland+grse": ("holland", "first_price", "rule", "grse", "llm"),
    "flagship": ("learned", "first_price", "grpo", "grse", "llm"),
    "defaults": ("learned", "first_price", "grpo", "none", "rule"),
    "defaults-no-grpo": ("learned", "first_price", "rule", "none", "rule"),
}


@pytest.mark.parametrize("arm", list(desk_compare.ARMS))
def test_every_arm_is_a_valid_desk_config_that_sets_what_it_names(arm):
    exp = desk_compare.config(arm, seed=3)
    assert exp.run.scenario == "desk" and exp.run.seed == 3
    got = (exp.market.bid_scheme, exp.market.clearing, exp.agents.actions, exp.skills.credit, exp.skills.diagnoser)
    assert got == NAMED[arm]
    assert desk_compare.trains_model(arm) == (exp.agents.actions == "grpo")
    if exp.agents.actions == "grpo":
        assert exp.agents.lm.lr == 1e-3
    compared = arm in desk_compare.COMPARED  # the stored comparison's size and wake-up, or desk.toml's own
    size = (exp.run.episodes, exp.market.batch, exp.run.eval_every, exp.scenario.policy.wake)
    assert size == ((192, 16, 3, True) if compared else (1024, 16, 8, False))
    if exp.agents.actions == "grpo":
        assert exp.agents.lm.temperature == (0.3 if compared else 1.0)


def row(arm, seed, curve, fair, curated=0.6, updates=0):
    return {"arm": arm, "seed": seed, "curve": [[3 * i, 48 * i, v] for i, v in enumerate(curve)],
            "heldout_success": curve[-1], "heldout_problems": 64, "complete_agent_success": fair,
            "curated_agent_success": curated, "policy_updates": updates, "seconds": 100.0}


def test_the_table_pairs_each_run_with_the_fair_complete_agent_of_the_same_run():
    fair = {0: 0.25, 1: 0.5, 2: 0.375}
    finals = {0: 0.5, 1: 0.45, 2: 0.7}
    rows = [row("holland", s, [0.2, finals[s]], fair[s]) for s in fair]
    rows += [row("learned+grpo", s, [0.3, 0.5, 0.8], fair[s] + 0.125, updates=10 + s) for s in fair]  # float32's
    table = {r["arm"]: r for r in desk_compare.table(rows)}
    diffs = np.array([finals[s] - fair[s] for s in fair])
    half = stats.t.ppf(0.975, 2) * diffs.std(ddof=1) / math.sqrt(3)
    holland = table["market, holland"]
    assert holland["minus fair complete agent (95%)"] == f"{diffs.mean():+.3f} ± {half:.3f}"
    assert holland["seeds for 0.05"] == str(math.ceil((2.8016 * diffs.std(ddof=1) / 0.05) ** 2))
    assert holland["curve (episodes: mean held-out success)"] == f"0: 0.200 48: {np.mean(list(finals.values())):.3f}"
    grpo = table["market, learned+grpo"]
    grpo_diffs = np.array([0.8 - fair[s] - 0.125 for s in fair])
    assert grpo["minus fair complete agent (95%)"].startswith(f"{grpo_diffs.mean():+.3f} ± ")
    assert grpo["gain over its first point"].startswith("+0.500 ± 0.000") and grpo["policy updates"] == "10 11 12"
    assert grpo["held-out SE (one run)"] == f"{math.sqrt(0.8 * 0.2 / 64):.3f}"
    shown = table["complete agent, fair (whole pool, planted lines included)"]["final held-out"]
    assert shown == "0.250 (holland); 0.375 (holland, learned+grpo); 0.500 (holland, learned+grpo); 0.625 (learned+grpo)"


def test_the_planted_lines_an_edit_targeted_are_read_at_their_first_version(tmp_path):
    db = tmp_path / "run.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE skill (library, name, version, body)")
        con.execute("CREATE TABLE skill_edit (library, operator, target, gate)")
        con.executemany("INSERT INTO skill VALUES (?, ?, ?, ?)", [
            ("L", "adder-example-3", 1, HARMFUL[0]), ("L", "adder-example-3", 2, "example: What is 2 + 3? => Answer: 5"),
            ("L", "adder-example-1", 1, "example: What is 3 + 4? => Answer: 7"),
            ("other", "adder-example-3", 1, "example: a line of another run's library")])
        con.executemany("INSERT INTO skill_edit VALUES (?, ?, ?, ?)", [
            ("L", "revise", "adder-example-3", "accepted"), ("L", "prune", "adder-example-1", "rejected"),
            ("L", "add", "adder-example-3", "ungated")])
    assert desk_compare.planted_prunes(db) == [HARMFUL[0]]
    assert desk_compare.planted_prunes(db, "rejected") == []  # a correct line's refused prune is not a planted one


def test_the_figure_draws_each_arm_s_mean_curve_beside_both_complete_agents(tmp_path):
    rows = [row("holland", s, [0.2, 0.4 + 0.1 * s], 0.3) for s in range(2)] + [row("flagship", 0, [0.3, 0.9], 0.3)]
    curves = dict(desk_compare.mean_curves(rows))
    assert [p["success"] for p in curves["holland (2 seeds)"]] == pytest.approx([0.2, 0.45])
    assert [p["episode"] for p in curves["flagship (1 seeds)"]] == [0, 48]
    desk_compare.figure(rows, tmp_path / "curves.png")
    assert (tmp_path / "curves.png").stat().st_size > 10_000


@pytest.mark.slow
def test_a_quick_grse_run_lands_a_row_with_its_curve_and_edit_passes(tmp_path):
    out = tmp_path / "desk.md"
    assert desk_compare.main(["--quick", "--arms", "holland+grse", "--seeds", "1", "--workers", "1",
                              "--out", str(out)]) == 0
    (got,) = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines()]
    assert got["arm"] == "holland+grse" and len(got["curve"]) == 3 and got["edit_passes"] >= 1
    assert set(got["planted_pruned"] + got["planted_refused"]) <= set(WRONG)
    assert "| market, holland+grse | 1 |" in out.read_text()


def test_each_mechanism_s_effect_pairs_the_arm_that_adds_it_with_the_arm_without_it_by_seed():
    rows = [row("learned", s, [0.4, 0.5 + 0.05 * s], 0.3) for s in range(3)]
    rows += [row("learned+grpo", s, [0.4, 0.7 + 0.1 * s], 0.3) for s in range(3)]
    rows += [row("holland", 0, [0.4, 0.6], 0.3)]  # holland+grse never ran: no GRSE row; learned-holland has one seed
    effects = {e["mechanism"]: e for e in desk_compare.effects_table(rows)}
    assert set(effects) == {"learned value bids", "LoRA GRPO"}
    diffs = [0.2, 0.25, 0.3]
    half = stats.t.ppf(0.975, 2) * np.std(diffs, ddof=1) / math.sqrt(3)
    assert effects["LoRA GRPO"]["final held-out (95%)"] == f"+0.250 ± {half:.3f}"
    assert effects["LoRA GRPO"]["gain over the first point (95%)"] == f"+0.250 ± {half:.3f}"  # same first points
    assert effects["learned value bids"]["seeds"] == 1
