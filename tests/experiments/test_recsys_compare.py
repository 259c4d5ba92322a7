"""The recsys comparison at toy size (2 seeds of the test-sized world, 3 iterations): the three tables are
well-formed, the mean row is the mean of the seeds, the matched arms gate no more edits than GRSE, and
every seed's run is in the database given."""

import re

import numpy as np
from sqlmodel import Session, select

from experiments import recsys_compare
from market.store import Run, make_engine
from tests.scenarios.recsys_small import OVERRIDES


def test_compare_prints_and_writes_the_tables(tmp_path, capsys):
    db, out = f"sqlite:///{tmp_path / 'compare.db'}", tmp_path / "table.md"
    args = ["--seeds", "2", "--db", db, "--out", str(out)]
    assert recsys_compare.main(args + [a for o in OVERRIDES for a in ("--set", o)]) == 0
    text = out.read_text()
    assert text.strip() == capsys.readouterr().out.strip()
    scores, arms, recall = text.split("\n\n")

    lines = scores.splitlines()
    columns = len(recsys_compare.ARMS) + len(recsys_compare.BASELINES) + 1  # + the initial library
    rows = [line.split(" | ") for line in lines[2:]]
    assert [row[0][2:] for row in rows] == ["0", "1", "mean"]
    ndcg = np.array([[float(v) for v in row[1:1 + columns]] for row in rows])
    assert ((0 <= ndcg) & (ndcg <= 1)).all()
    np.testing.assert_allclose(ndcg[2], ndcg[:2].mean(0), atol=1e-4)  # the mean row (each cell rounded)
    assert all(re.fullmatch(r"[0-3] / [0-3] of 3 \|", row[-1]) for row in rows[:2])

    gated = {}
    for line in arms.splitlines()[2:]:
        name, accepted, total, pruned = line.strip("| ").split(" | ")
        assert 0 <= int(accepted) <= int(total) and re.fullmatch(r"[0-6] of 6", pruned)
        gated[name] = int(total)
    assert list(gated) == [name for _, name in recsys_compare.ARMS]
    assert gated["presence"] <= gated["GRSE"] and gated["random (matched)"] <= gated["GRSE"]

    rows = [line.strip("| ").split(" | ") for line in recall.splitlines()[2:]]
    assert [row[0] for row in rows] == ["0", "1"]
    assert all(0 <= float(v) <= 1 for row in rows for v in row[1:-1]) and {row[-1] for row in rows} <= set(
        name for name, _ in recsys_compare.BASELINES)

    with Session(make_engine(db)) as s:
        runs = s.exec(select(Run)).all()
    assert sorted(r.seed for r in runs) == [0, 1] and {(r.scenario, r.status) for r in runs} == {("recsys", "finished")}
