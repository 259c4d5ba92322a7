"""The recsys comparison at toy size (``--quick``: 2 seeds of a test-sized synthetic world and of the MovieLens
fixture without its genre file, 3 iterations): one well-formed table per world, means and paired differences
that are those of the seeds, verdicts that follow from the numbers, every run in the database given."""

import json
import re

import numpy as np
import pytest
from sqlmodel import Session, select

from experiments import recsys_compare
from market.store import Run, make_engine

CELL = re.compile(r"(-?\d\.\d{4}) ± (\d\.\d{4})")


def test_compare_writes_one_table_per_world(tmp_path, capsys):
    db, out = f"sqlite:///{tmp_path / 'compare.db'}", tmp_path / "tables.md"
    worlds = ["no-genres", "ml-100k-nogenres"]
    assert recsys_compare.main(["--quick", "--seeds", "2", "--worlds", ",".join(worlds), "--db", db,
                                "--out", str(out), "--rows", str(tmp_path / "recsys.jsonl")]) == 0
    overview = [json.loads(line) for line in (tmp_path / "recsys.jsonl").read_text().splitlines()]  # the docs' rows
    assert overview and all(r["command"].startswith("python -m experiments.recsys_compare") for r in overview)
    assert (tmp_path / "recsys_no-genres.jsonl").is_file() and (tmp_path / "recsys_no-genres-1.jsonl").is_file()
    text = out.read_text()
    assert text.strip() == capsys.readouterr().out.strip()
    summaries = json.loads(out.with_suffix(".json").read_text())
    assert list(summaries) == worlds and all(list(s) == ["0", "1"] for s in summaries.values())

    blocks = text.split("### ")[1:]
    assert [b.split(" ")[0] for b in blocks] == [*worlds, "all"]
    for name, block in zip(worlds, blocks):
        seeds = summaries[name]
        arms, per_seed, verdict = block.split("\n\n")[1:4]
        rows = {line.split(" | ")[0][2:]: [tuple(map(float, m)) for m in CELL.findall(line)]
                for line in arms.splitlines()[2:]}
        labels = ["initial library", *(n for _, n in recsys_compare.ARMS), *(n for _, n in recsys_compare.BASELINES),
                  "strongest tuned (on validation)", "tuned blend (validated; the start holds it)",
                  "**GRSE − strongest tuned (paired)**", "GRSE − tuned blend (paired)"]
        assert list(rows) == labels and all(len(r) == 3 for r in rows.values())
        grse = np.array([[s["arms"]["grse"][f"{m}_final"] for m, _ in recsys_compare.METRICS] for s in seeds.values()])
        best = np.array([[s["baselines"][s["baseline_best"]], s["baselines_recall50"][s["baseline_best"]],
                          s["baselines_coverage"][s["baseline_best"]]] for s in seeds.values()])
        np.testing.assert_allclose([m for m, _ in rows["GRSE"]], grse.mean(0), atol=1e-4)
        np.testing.assert_allclose([m for m, _ in rows["**GRSE − strongest tuned (paired)**"]],
                                   (grse - best).mean(0), atol=1e-4)
        np.testing.assert_allclose([sd for _, sd in rows["**GRSE − strongest tuned (paired)**"]],
                                   (grse - best).std(0, ddof=1), atol=1e-4)
        blend = np.array([[s["baseline_blend"][m] for m, _ in recsys_compare.METRICS]
                          for s in seeds.values()])
        np.testing.assert_allclose([m for m, _ in rows["GRSE − tuned blend (paired)"]], (grse - blend).mean(0), atol=1e-4)
        assert all(0 <= m <= 1 for label, r in rows.items() if "−" not in label for m, _ in r)

        lines = [line.strip("| ").split(" | ") for line in per_seed.splitlines()[2:]]
        assert [line[0] for line in lines] == ["0", "1"]
        assert [line[1] for line in lines] == [s["baseline_best"] for s in seeds.values()]
        assert all(re.fullmatch(r"[0-3] / [0-3] / [0-3] of 3", line[5]) for line in lines)
        beats = (grse - best)[:, 0].mean() > 0
        assert f"mean NDCG@10: **{'yes' if beats else 'no'}**" in verdict

    gain = [json.loads(x) for x in (tmp_path / "recsys_worlds_gain_worlds.jsonl").read_text().splitlines()]
    assert [g["world"] for g in gain] == [f"{w} {seed}" for w in worlds for seed in ("0", "1")]
    for g in gain:  # each difference is the summary's paired one, and that is the final library minus the blend alone
        name, seed = g["world"].split()
        summary = summaries[name][seed]
        mean, se = summary["arms"]["grse"]["vs_blend"]
        assert g["GRSE − tuned blend"] == f"{mean:+.4f} ± {1.96 * se:.4f}"
        assert mean == pytest.approx(summary["arms"]["grse"]["ndcg10_final"] - summary["baseline_blend"]["ndcg10"],
                                     abs=2e-6)
        assert g["pruned detectable GRSE / presence"].endswith(f"of {sum(h['detectable'] for h in summary['planted_harm'])}")

    with Session(make_engine(db)) as s:
        runs = s.exec(select(Run)).all()
    assert len(runs) == 4 and {(r.scenario, r.status) for r in runs} == {("recsys", "finished")}


def test_verdict_needs_four_of_five_seeds_where_presence_falls_short():
    def seed(grse, presence, diff):  # a summary with every column columns() reads; the best baseline at 0.2
        ms = recsys_compare.METRICS
        arms = {a: {f"{m}_final": 0.2 + diff for m, _ in ms} for a, _ in recsys_compare.ARMS}
        zero = {b: 0.2 for b, _ in recsys_compare.BASELINES}
        return {"arms": arms, "baseline_best": "ease", "baselines": zero, "baselines_recall50": zero,
                "baselines_coverage": zero, "baseline_blend": {m: 0.2 for m, _ in ms}, "harmful_planted": 3, "harmful_pruned_grse": grse,
                "harmful_pruned_presence": presence, **{f"{m}_initial": 0.0 for m, _ in ms}}
    mixed = {i: seed(3, 3 if i == 0 else 1, 0.01) for i in range(4)} | {4: seed(2, 3, -0.01)}
    v = recsys_compare.verdict(mixed)
    assert v["beats"] and v["wins"] == 4 and v["pruned"] == {"grse": 4, "presence": 2} and v["prunes"]
    assert not recsys_compare.verdict({i: seed(3, 3, 0.01) for i in range(5)})["prunes"]  # presence does it too
    assert not recsys_compare.verdict({i: seed(3 if i < 3 else 2, 0, 0.01) for i in range(5)})["prunes"]


def test_unknown_world_is_refused_before_anything_runs():
    with pytest.raises(SystemExit, match="unknown world 'mars'"):
        recsys_compare.main(["--quick", "--worlds", "default,mars"])


@pytest.mark.parametrize("flags", [["--zoo", "51"], ["--zoo", "2", "--zoo-from", "3"],
                                   ["--zoo", "2", "--zoo-from", "-1"]])
def test_a_zoo_range_outside_the_zoo_is_refused_before_anything_runs(flags, capsys):
    with pytest.raises(SystemExit) as refused:
        recsys_compare.main(["--quick", "--worlds", "", *flags])
    assert refused.value.code == 2 and flags[-2] in capsys.readouterr().err


@pytest.mark.slow
def test_zoo_rows_and_their_distribution(tmp_path):
    """One development zoo world at toy budget (the second: ``--zoo-from`` skips the first): its row is the run's
    summary, and the distribution counts it."""
    rows = tmp_path / "zoo.jsonl"
    assert recsys_compare.main(["--quick", "--worlds", "", "--zoo", "2", "--zoo-from", "1", "--zoo-dev", "--db",
                                f"sqlite:///{tmp_path / 'z.db'}", "--out", str(tmp_path / "z.md"),
                                "--rows", str(rows)]) == 0
    stats = {r["statistic"]: r["value"] for r in map(json.loads, rows.read_text().splitlines())}
    (world,) = json.loads((tmp_path / "z-zoo.json").read_text())
    assert world["world"] == recsys_compare.zoo.DEV_SEEDS[1] and world["planted"] == 3
    assert world["gap"] == pytest.approx(world["grse"] - world["best tuned NDCG@10"], abs=2e-4) and world["se"] > 0
    assert stats["worlds"] == "1"
    assert stats["GRSE > best tuned"] == ("1 of 1 (100%)" if world["gap"] > 0 else "0 of 1 (0%)")
    above_blend = world["grse"] > world["tuned blend NDCG@10"]
    assert stats["GRSE > tuned blend"] == ("1 of 1 (100%)" if above_blend else "0 of 1 (0%)")
    assert stats["all planted pruned: grse"].startswith("1 of 1" if world["pruned grse"] == 3 else "0 of 1")
    lines = [json.loads(x) for x in (tmp_path / "zoo_zoo_worlds.jsonl").read_text().splitlines()]
    assert [int(x["world"]) for x in lines] == [world["world"]]
    assert not (tmp_path / "zoo_zoo_partial.jsonl").exists()
