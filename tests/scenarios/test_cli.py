"""The `catallax` command line: a JSON summary last; every bad input is one error line, exit 2, nothing written."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios.cli.main import main

CATALLAX = Path(sys.executable).parent / "catallax"
KEYS = {"run_id", "scenario", "seed", "episodes", "ledger_hash", "conservation_ok", "success_rate", "stage_solvent"}


def catallax(*args, cwd):
    return subprocess.run([str(CATALLAX), *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_run_prints_the_summary_as_json_last(tmp_path):
    out = tmp_path / "out"
    proc = catallax("run", "relay", "--json", "--set", "run.episodes=50", "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert KEYS <= summary.keys()
    assert summary["scenario"] == "relay" and summary["episodes"] == 50 and summary["seed"] == 0
    assert summary["conservation_ok"] is True
    assert 0.0 <= summary["success_rate"] <= 1.0
    assert len(summary["stage_solvent"]) == 5 and all(isinstance(s, bool) for s in summary["stage_solvent"])
    assert len(summary["ledger_hash"]) == 64
    assert (out / "catallax.db").is_file()


def test_bad_key_is_one_line_exit_2_and_writes_nothing(tmp_path):
    out = tmp_path / "out"
    proc = catallax("run", "relay", "--json", "--set", "market.clearng=x", "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "market.clearng" in lines[0] and "clearing" in lines[0].replace("market.clearng", "")
    assert proc.stdout == ""
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_module_entry_point_with_seed_and_db(tmp_path):
    db = tmp_path / "x.db"
    proc = subprocess.run([sys.executable, "-m", "scenarios.cli.main", "run", "relay", "--json", "--seed", "3",
                           "--set", "run.episodes=20", "--set", "market.batch=4", "--db", f"sqlite:///{db}"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["seed"] == 3 and summary["episodes"] == 20 and summary["conservation_ok"] is True
    assert db.is_file() and not (tmp_path / "runs").exists()  # with --db, no --out folder


@pytest.mark.parametrize("args, named", [
    (["relay", "--set", "market.batch=0"], "market.batch = 0"),
    (["relay", "--set", "population.max_agents=-1"], "population.max_agents"),
    (["relay", "--set", "market.payment=gift"], "market.payment = 'gift'"),
    (["relax"], "relax: unknown scenario"),
    (["nowhere.toml"], "nowhere.toml"),
    (["relay", "--set", "foo.bar=1"], "[foo]: unknown section"),
    (["relay", "--set", "market.batch"], "--set market.batch"),
    (["relay", "--set", "=3"], "--set =3"),
    (["relay", "--set", "run.scenario=juggle"], "juggle"),
    (["relay", "--db", "notaurl"], "--db notaurl"),
])
def test_bad_input_exits_2_naming_it(tmp_path, capsys, args, named):
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_:
        main(["run", *args, "--json", "--out", str(out)])
    assert exit_.value.code == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], captured.err
    assert captured.out == ""
    assert not out.exists()


def test_unknown_key_suggests_nothing_when_nothing_is_close(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["run", "relay", "--set", "market.zzzzzz=1", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert "market.zzzzzz = 1: unknown key" in err and "did you mean" not in err


def test_unknown_database_dialect_exits_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["run", "relay", "--json", "--set", "run.episodes=5", "--db", "nosuchdb://x/y", "--out", str(tmp_path / "o")])
    assert exit_.value.code == 2
    assert "nosuchdb" in capsys.readouterr().err
