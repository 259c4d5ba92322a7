"""The experiments' harness: a toy grid runs in two spawned processes and comes back in the jobs' order whatever
order it finished in, equal to the same grid run here; a failed job stops the grid naming itself; every script
in experiments/ shows the shared flags; the one ± formatter writes what the tables need."""

import argparse
import importlib
import os
import pkgutil

import numpy as np
import pytest

import experiments
from experiments import harness
from tests.experiments.toy_grid import broken, toy


def test_a_toy_grid_runs_in_parallel_and_comes_back_in_job_order(tmp_path):
    """The first job waits until the last one has started: it can finish only in a second process, and lands last."""
    args = harness.parse(harness.add_flags(argparse.ArgumentParser(), seeds=3, workers=1), ["--workers", "2"])
    cells = [(arm, seed) for arm in ("a", "bb") for seed in harness.seeds(args)]
    last = str(tmp_path / "last-started")
    jobs = [(*cell, last if i == 0 else "", last if i == len(cells) - 1 else "") for i, cell in enumerate(cells)]
    landed = []
    parallel = harness.run(toy, jobs, args, on_result=lambda i, r: landed.append(cells[i]))
    serial = harness.run(toy, cells)  # one by one, in this process
    assert [(r["arm"], r["seed"]) for r in parallel] == cells  # the jobs' order, whatever order they finished in
    assert landed[-1] == cells[0] and sorted(landed) == sorted(cells)
    assert [r["draw"] for r in parallel] == [r["draw"] for r in serial]  # the same numbers wherever they ran
    assert len({r["pid"] for r in parallel}) == 2 and os.getpid() not in {r["pid"] for r in parallel}
    assert {r["pid"] for r in serial} == {os.getpid()}


def test_a_failed_job_stops_the_grid_with_its_own_error_naming_the_job():
    args = harness.parse(harness.add_flags(argparse.ArgumentParser()), ["--workers", "2"])
    with pytest.raises(ValueError, match="seed 2 broke") as caught:
        harness.run(broken, [(s,) for s in range(4)], args)
    assert any("in job 2 of 4: broken(2,)" in note for note in caught.value.__notes__)


def test_seeds_resolve_from_the_flags_and_a_bad_count_is_refused(capsys):
    parser = harness.add_flags(argparse.ArgumentParser(), seeds=5)
    assert list(harness.seeds(harness.parse(parser, []))) == [0, 1, 2, 3, 4]
    assert list(harness.seeds(harness.parse(parser, ["--quick"]))) == [0]
    assert list(harness.seeds(harness.parse(parser, ["--quick", "--seeds", "2", "--first-seed", "7"]))) == [7, 8]
    with pytest.raises(SystemExit) as bad:
        harness.parse(parser, ["--seeds", "0"])
    assert bad.value.code == 2 and "--seeds 0: need at least 1" in capsys.readouterr().err


SCRIPTS = sorted(m.name for m in pkgutil.iter_modules(experiments.__path__) if m.name not in ("rows", "harness"))
TABULATORS = ("recsys_gain", "recsys_zoo")  # they tabulate rows other runs kept: only the output flags
MEASURES = ("text_gate_power", "desk_context_harm")  # one greedy measurement on fixed problems: no seeds to pair, config overrides
SHARED = ("--seeds", "--first-seed", "--quick", "--workers", "--ray", "--address", "--rows")


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_script_shows_the_shared_flags(name, capsys):
    module = importlib.import_module(f"experiments.{name}")
    with pytest.raises(SystemExit) as done:
        module.main(["--help"])
    shown = capsys.readouterr().out
    assert done.value.code == 0
    for flag in ("--rows",) if name in TABULATORS else ("--rows", "--set") if name in MEASURES else SHARED:
        assert f"{flag} " in shown or f"{flag}\n" in shown, f"{name} --help lacks {flag}"
    assert module.harness is harness  # it takes them from the harness, not its own


def test_the_one_formatter_writes_each_tables_spread():
    assert harness.mean_sd([0.5, 0.1], 3) == f"0.300 ± {np.std([0.5, 0.1], ddof=1):.3f}"
    assert harness.mean_sd([0.5], 3) == "0.500 ± 0.000" and harness.mean_sd([0.5], 2, lone=True) == "0.50"
    assert harness.mean_sd([1.0, 0.0], 2, ddof=0) == "0.50 ± 0.50" and harness.mean_sd([None], 2) == "-"
    assert harness.mean_sd([-0.01, 0.03], 4, sign=True) == f"+0.0100 ± {np.std([-0.01, 0.03], ddof=1):.4f}"
    assert harness.pm(0.25, 0.125, 3, sep=" +- ") == "0.250 +- 0.125" and harness.pm(123.456, 1.234) == "123.5 ± 1.2"
    assert harness.pm(float("nan")) == "-" and harness.pm(0.5, float("nan")) == "0.5"
    assert harness.markdown(["a", "b"], [[1, "x"]]) == "| a | b |\n|---|---|\n| 1 | x |"


def test_a_log_keeps_each_run_as_it_lands_and_a_rerun_replaces_it(tmp_path, capsys):
    log = tmp_path / "runs" / "log.jsonl"
    landed = harness.logged(log, lambda r: f"{r['arm']} seed {r['seed']} landed")
    for i, row in enumerate([{"arm": "a", "seed": 0, "x": 1}, {"arm": "b", "seed": 0, "x": 2}, {"arm": "a", "seed": 0, "x": 3}]):
        landed(i, row)
    assert capsys.readouterr().err.splitlines() == ["a seed 0 landed", "b seed 0 landed", "a seed 0 landed"]
    assert len(log.read_text().splitlines()) == 3
    assert harness.read_log(log) == [{"arm": "a", "seed": 0, "x": 3}, {"arm": "b", "seed": 0, "x": 2}]


def test_a_refused_config_in_a_grid_is_one_line_and_exit_2(capsys):
    from experiments import relay_payment

    with pytest.raises(SystemExit) as refused:
        relay_payment.main(["--quick", "--set", "market.nope=1"])
    assert refused.value.code == 2
    assert capsys.readouterr().err.splitlines() == ["error: --set market.nope=1: market.nope = 1: unknown key"]
