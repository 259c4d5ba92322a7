"""The blocks ablation at toy size (160 episodes, 5 held-out instances per size, one seed): every row runs
through main() in a worker process, keeps the books (a run that breaks conservation raises, e.g. a negative
price under random clearing) and lands in the table, the JSON and the plot."""

import json

from experiments import blocks_ablation


def test_every_ablation_runs_into_the_table_json_and_plot(tmp_path, capsys):
    out = tmp_path / "ablation"
    blocks_ablation.main(["--quick", "--workers", "1", "--out", str(out), "--rows", str(tmp_path / "rows.jsonl")])
    results = json.loads((out / "ablation.json").read_text())
    assert [r["ablation"] for r in results] == list(blocks_ablation.ABLATIONS)
    for r in results:
        assert r["episodes"] == 160 and set(r["heldout_success"]) == {"4", "8", "16", "32"}
        assert all(0 <= v <= 1 for v in r["heldout_success"].values())
    assert len({r["ledger_hash"] for r in results}) == len(results)  # each row's --set changed the economy
    table = (out / "ablation.md").read_text()
    assert table.strip() in capsys.readouterr().out
    rows = [line.split(" | ") for line in table.splitlines() if line.startswith("| ") and "ablation" not in line]
    assert [row[0][2:] for row in rows] == list(blocks_ablation.ABLATIONS)
    assert all(sum("±" in cell for cell in row) == 4 for row in rows)  # mean ± std at n = 4, 8, 16, 32
    assert (out / "success_vs_size.png").stat().st_size > 0
    stored = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]  # the docs' rows
    assert [r["ablation"] for r in stored] == list(blocks_ablation.ABLATIONS) and all("n=32" in r for r in stored)
    assert all(r["command"].startswith("python -m experiments.blocks_ablation") for r in stored)
