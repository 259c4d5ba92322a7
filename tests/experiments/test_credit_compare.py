"""The credit comparison at toy size (2 seeds x 4 rounds, three estimators): one well-formed row per
estimator, printed and written; and the episodes-to-threshold arithmetic behind its table."""

import json
import re

import numpy as np

from experiments import credit_compare


def test_compare_script_writes_one_row_per_estimator(tmp_path):
    out = tmp_path / "table.md"
    table = credit_compare.main(["--seeds", "2", "--rounds", "4", "--batch", "8", "--credit", "none,grpo,cast",
                                 "--out", str(out), "--rows", str(tmp_path / "rows.jsonl")])
    assert out.read_text().strip() == table.strip()
    stored = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]  # the docs' rows
    assert [r["credit"] for r in stored] == ["none", "grpo", "cast"]
    assert all(r["command"].startswith("python -m experiments.credit_compare --seeds 2") and r["date"] and r["commit"]
               and r["machine"] for r in stored)
    assert table.startswith("relay (K=5, p_specialist=0.2), 2 seeds x 32 episodes, G=4")
    rows = [line.split("|")[1:-1] for line in table.splitlines() if line.startswith("| ") and "credit" not in line]
    assert [row[0].strip() for row in rows] == ["none", "grpo", "cast"]
    for _, final, reach, var in rows:
        mean, std = (float(x) for x in final.split("+-"))
        assert 0 <= mean <= 1 and 0 <= std <= 0.5
        assert abs(float(var) - std**2) < 1e-3
        episodes, reached = re.fullmatch(r" (-|\d+) \(([0-2])/2\) ", reach).groups()
        assert (episodes == "-") == (reached == "0")


def test_summarise_counts_episodes_until_the_moving_average_reaches_the_threshold():
    curves = np.array([[0, 0, 0, 1, 1, 1, 1, 1, 1, 1], [0] * 10], dtype=float)
    s = credit_compare.summarise(curves, batch=8, threshold=0.9)
    # seed 0: rounds 3..7 are the first 5-round window at >= 0.9, reached after 8 rounds of 8 episodes; seed 1 never
    assert s["reach"] == 64 and s["reached"] == 1
    assert s["final"] == 0.5 and s["std"] == 0.5 and s["var"] == 0.25  # last 20% (2 rounds): 1 and 0
