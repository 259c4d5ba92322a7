"""Smoke test of the database benchmark, through `catallax bench db` (the CLI passes the script's output through)."""

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from scenarios.cli.main import main

ROOT = Path(__file__).resolve().parents[2]

CATALLAX = Path(sys.executable).parent / "catallax"


def test_bench_db_quick_json_through_the_cli(tmp_path):
    other = f"sqlite:///{tmp_path / 'other.db'}"  # --db takes any SQLAlchemy URL (PostgreSQL in real use)
    proc = subprocess.run([str(CATALLAX), "bench", "db", "--quick", "--json", "--db", other],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["databases"] == ["sqlite", "sqlite_db"]
    for key in ("sqlite_per_s_100", "sqlite_per_s_1k", "sqlite_db_per_s_1k", "sqlite_driver_per_s_1k"):
        assert result[key] > 0, key
    assert result["ratio_sqlite_db_vs_sqlite_1k"] > 0
    with sqlite3.connect(tmp_path / "other.db") as db:  # the benchmark removes its runs from a database it is given
        assert db.execute("SELECT count(*) FROM transfer").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM run").fetchone() == (0,)


def test_bench_rejects_unknown_names_and_misplaced_options(capsys):
    for args, named in ((["nope"], "bench nope: unknown benchmark"), (["engine", "--out", "x"], "--out applies to bench scaling")):
        with pytest.raises(SystemExit) as exit_:
            main(["bench", *args])
        out = capsys.readouterr()
        assert exit_.value.code == 2 and named in out.err and out.out == ""


def test_db_benchmark_quick_against_postgresql(postgres):
    """The --db path on a real PostgreSQL server (the suite's throwaway cluster); the benchmark leaves no runs."""
    url = postgres.new_database()
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "db.py"), "--quick", "--json", "--db", url],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["databases"] == ["sqlite", "postgresql"]
    assert result["postgresql_per_s_1k"] > 0 and result["ratio_postgresql_vs_sqlite_1k"] > 0
    engine = create_engine(url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM transfer")).scalar() == 0
        assert conn.execute(text("SELECT count(*) FROM run")).scalar() == 0
    engine.dispose()
