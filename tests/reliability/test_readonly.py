"""Commands that only read change nothing: resuming a finished run, `skills list`, `report`, and any command
that fails to open a foreign SQLite file leave its bytes, mtime and journal mode as they were (read-only opens)."""

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from scenarios.run.config import load
from scenarios.run.runner import run_experiment

CATALLAX = Path(sys.executable).parent / "catallax"


def catallax(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(CATALLAX), *args], capture_output=True, text=True, timeout=120, check=False)


def fingerprint(path: Path) -> tuple:
    return path.read_bytes(), path.stat().st_mtime_ns


@pytest.fixture
def finished(tmp_path):
    db = tmp_path / "catallax.db"
    summary = run_experiment(load("relay", ["run.episodes=30"]), f"sqlite:///{db}", progress=False)
    return db, summary


def test_resume_of_a_finished_run_prints_its_summary_and_writes_nothing(finished):
    db, summary = finished
    before = fingerprint(db)
    proc = catallax("resume", summary["run_id"], "--db", f"sqlite:///{db}", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == summary
    assert f"run {summary['run_id']} finished at " in proc.stderr and "nothing to resume" in proc.stderr
    assert fingerprint(db) == before


def test_resume_of_a_finished_run_keeps_finished_at_on_postgres(postgres):
    url = postgres.new_database()
    summary = run_experiment(load("relay", ["run.episodes=30"]), url, progress=False)
    engine = create_engine(url)
    query = text("SELECT status, finished_at, summary FROM run")
    with engine.connect() as c:
        before = c.execute(query).all()
    assert catallax("resume", summary["run_id"], "--db", url).returncode == 0
    with engine.connect() as c:
        assert c.execute(query).all() == before
    engine.dispose()


def test_skills_list_creates_no_tables(finished):
    db, summary = finished
    before = fingerprint(db)
    for args in (["list"], ["list", "--all", "--run", summary["run_id"]], ["lineage", "--run", summary["run_id"]]):
        proc = catallax("skills", *args, "--db", f"sqlite:///{db}")
        assert proc.returncode == 0, proc.stderr
    assert fingerprint(db) == before
    engine = create_engine(f"sqlite:///{db}")
    assert "skill" not in inspect(engine).get_table_names()
    engine.dispose()


def test_report_reads_the_database_and_writes_only_its_files(finished, tmp_path):
    db, summary = finished
    before = fingerprint(db)
    proc = catallax("report", summary["run_id"], "--db", f"sqlite:///{db}", "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert fingerprint(db) == before and (tmp_path / "out" / f"report-{summary['run_id']}" / "summary.md").exists()


@pytest.fixture
def foreign(tmp_path):
    """Another program's SQLite file (rollback journal), with a table named like ours."""
    db = tmp_path / "theirs.db"
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("CREATE TABLE run (id TEXT PRIMARY KEY, owner TEXT)")
        conn.execute("INSERT INTO run VALUES ('x', 'them')")
    conn.close()
    return db


@pytest.mark.parametrize("command", [["run", "relay", "--set", "run.episodes=10"], ["resume", "x"],
                                     ["skills", "list"], ["skills", "show", "rank"]], ids=lambda c: " ".join(c[:2]))
def test_a_foreign_sqlite_file_is_refused_and_left_as_it_was(foreign, command):
    before = fingerprint(foreign)
    proc = catallax(*command, "--db", f"sqlite:///{foreign}")
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"catallax: error: --db sqlite:///{foreign}: "), line
    assert fingerprint(foreign) == before
    assert foreign.read_bytes()[18:20] == b"\x01\x01"  # file format: rollback journal still, not WAL (2, 2)
