"""One writer per run (market/store.py's Lease): a second `catallax run`/`resume` of a run that a live process
writes is refused in one line, exit 2, and the writer ends as if alone; a dead writer's run is taken over;
a writer whose lease was taken over writes nothing more. Real processes, real SIGKILL; SQLite and PostgreSQL."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DBAPIError
from sqlmodel import Session

from market.store import Lease, Run, RunStore, StoreError
from scenarios.run.config import load
from scenarios.run.runner import resume_experiment, run_experiment

CATALLAX = Path(sys.executable).parent / "catallax"
EPISODES = 1200  # ~10 s of rounds: long enough that the others start while it runs
SETS = [f"run.episodes={EPISODES}", "run.checkpoint_every=3"]
SEED = 11


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return run_experiment(load("relay", SETS, seed=SEED), f"sqlite:///{tmp_path_factory.mktemp('ref') / 'r.db'}",
                          progress=False)


@pytest.fixture
def procs():
    """Started processes; any still running when the test ends is killed."""
    started = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
            p.communicate()


def start(procs, *args) -> subprocess.Popen:
    procs.append(subprocess.Popen([str(CATALLAX), *args, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True))
    return procs[-1]


def first_checkpoint(url: str, proc: subprocess.Popen) -> str:
    """Wait until the run has written a checkpoint; its id."""
    engine = create_engine(url)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            try:
                with engine.connect() as c:
                    row = c.execute(text("SELECT run_id FROM checkpoint")).first()
            except DBAPIError:  # no tables yet
                row = None
            if row:
                return row[0]
            time.sleep(0.05)
        pytest.fail("no checkpoint")
    finally:
        engine.dispose()


def summary_of(proc: subprocess.Popen, timeout=300) -> dict:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_resume_of_a_run_that_is_being_written_is_refused(db_url, reference, procs):
    writer = start(procs, "run", "relay", *sum((["--set", s] for s in SETS), []), "--seed", str(SEED), "--db", db_url)
    run_id = first_checkpoint(db_url, writer)
    second = subprocess.run([str(CATALLAX), "resume", run_id, "--db", db_url], capture_output=True, text=True,
                            timeout=120, check=False)
    assert writer.poll() is None, "the writer ended before the second resume was refused: make the run longer"
    assert second.returncode == 2
    [line] = second.stderr.strip().splitlines()
    assert line.startswith(f"catallax: error: run {run_id} is being written by PID {writer.pid} on "
                           f"{socket.gethostname()} since "), line
    summary = summary_of(writer)
    assert summary["ledger_hash"] == reference["ledger_hash"] and summary["transfers"] == reference["transfers"]


def test_two_resumes_of_a_killed_run_one_proceeds(db_url, reference, procs):
    """SIGKILL the writer (its lease stays behind: same host, dead pid), then two resumes at once: exactly one
    takes the run over and finishes with the uninterrupted hash; the other exits 2 with one line."""
    writer = start(procs, "run", "relay", *sum((["--set", s] for s in SETS), []), "--seed", str(SEED), "--db", db_url)
    run_id = first_checkpoint(db_url, writer)
    writer.send_signal(signal.SIGKILL)
    writer.communicate()
    a, b = (start(procs, "resume", run_id, "--db", db_url) for _ in range(2))
    results = []
    for p in (a, b):
        out, err = p.communicate(timeout=300)
        results.append((p.returncode, out, err))
    assert sorted(rc for rc, _, _ in results) == [0, 2], [r[2][-2000:] for r in results]
    (_, out, _), = [r for r in results if r[0] == 0]
    (_, _, err), = [r for r in results if r[0] == 2]
    [line] = err.strip().splitlines()
    assert line.startswith(f"catallax: error: run {run_id} is being written by PID "), line
    assert json.loads(out.strip().splitlines()[-1])["ledger_hash"] == reference["ledger_hash"]


def plant_lease(url: str, run_id: str, host: str, pid: int, age_s: float) -> None:
    engine = create_engine(url)
    beat = datetime.now(UTC) - timedelta(seconds=age_s)
    with Session(engine) as s:
        s.merge(Lease(run_id=run_id, token="someone-else", host=host, pid=pid, since=beat, heartbeat=beat))
        s.execute(text("UPDATE run SET status = 'running'"))
        s.execute(text("DELETE FROM checkpoint"))
        s.commit()
    engine.dispose()


def test_a_lease_on_another_host_holds_until_it_goes_stale(tmp_path):
    """No pid can be checked on another host: its lease is live while renewed, and taken over once stale."""
    url = f"sqlite:///{tmp_path / 'c.db'}"
    exp = load("relay", ["run.episodes=30"], seed=2)
    done = run_experiment(exp, url, progress=False)
    plant_lease(url, done["run_id"], "elsewhere", 1, age_s=60)
    with pytest.raises(StoreError, match=f"run {done['run_id']} is being written by PID 1 on elsewhere since"):
        resume_experiment(done["run_id"], url, progress=False)
    plant_lease(url, done["run_id"], "elsewhere", 1, age_s=3600)
    assert resume_experiment(done["run_id"], url, progress=False)["ledger_hash"] == done["ledger_hash"]
    plant_lease(url, done["run_id"], socket.gethostname(), os.getpid(), age_s=0)  # alive: this very process
    with pytest.raises(StoreError, match="is being written by PID"):
        resume_experiment(done["run_id"], url, progress=False)


def test_a_writer_whose_lease_was_taken_over_writes_nothing_more(tmp_path):
    url = f"sqlite:///{tmp_path / 'c.db'}"
    first = RunStore.create(url, "relay", 0, {})
    second, _, _ = RunStore.attach(url, first.run_id, take_over=True)  # e.g. a sweep task Ray retried
    with pytest.raises(StoreError, match=f"run {first.run_id}: another process took it over"):
        first.write_rounds([], b"state", 0)
    first.fail("boom")  # not ours any more: the run is left to its new writer
    second.write_rounds([], b"state", 0)
    with Session(second.engine) as s:
        assert s.get(Run, first.run_id).status == "running" and s.get(Lease, first.run_id).token == second.token
