"""Crash-resume: `catallax run` SIGKILLed at random moments and inside an open database write, then
`catallax resume`, ends with the ledger hash and metrics of an uninterrupted run with the same seed.

Kill points come from a seeded RNG (reproducible). The write kill runs the command through
tests/scenarios/faults.py, which sets the store's test-only injection point: the N-th write of the process
(a checkpoint and the rounds since the one before) stops with its transaction open (rows sent, nothing
committed) and says so on stderr; the test kills it there. After every kill the database must hold whole rounds only, up to the checkpoint.
"""

import hashlib
import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DBAPIError

from market.store import load_transfers, make_engine
from scenarios.run.config import load
from scenarios.run.runner import resume_experiment, run_experiment

CATALLAX = Path(sys.executable).parent / "catallax"
ROOT = Path(__file__).resolve().parents[2]  # python -m tests.scenarios.faults runs from the repository root
SAME = ("episodes", "ledger_hash", "conservation_ok", "transfers", "house", "success_rate", "stage_solvent", "population")


STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def no_strays():
    """A test that fails half-way leaves no catallax process running."""
    yield
    while STARTED:
        proc = STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def start(*args, fault: int | None = None) -> subprocess.Popen:
    command = [str(CATALLAX)] if fault is None else [sys.executable, "-m", "tests.scenarios.faults", str(fault)]
    STARTED.append(subprocess.Popen([*command, *args, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, cwd=None if fault is None else ROOT))
    return STARTED[-1]


def kill(proc: subprocess.Popen) -> None:
    assert proc.poll() is None, f"the process ended before it was killed: {proc.communicate()}"
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def kill_inside_write(proc: subprocess.Popen) -> None:
    """Wait for the fault injection's word that the write transaction is open, then SIGKILL."""
    for line in proc.stderr:
        if "fault injection: hanging inside write" in line:
            return kill(proc)
    pytest.fail(f"no fault-injection line; the process ended: {proc.wait()}")


def state(url: str) -> dict:
    """What the database holds now (read with a plain engine, beside the writer)."""
    engine = create_engine(url)
    with engine.connect() as c:
        q = lambda sql: c.execute(text(sql)).all()
        out = {"runs": q("SELECT id FROM run"), "episodes": [r[0] for r in q("SELECT episode FROM episode ORDER BY episode")],
               "seq": [r[0] for r in q("SELECT seq FROM transfer ORDER BY seq")],
               "last_transfer_episode": q("SELECT max(episode) FROM transfer")[0][0],
               "checkpoint": q("SELECT episodes_done, transfers FROM checkpoint")}
    engine.dispose()
    return out


def whole_rounds(url: str) -> dict:
    """The database after a kill holds whole rounds: no gap, no stray row past the last episode, a matching checkpoint."""
    s = state(url)
    k, m = len(s["episodes"]), len(s["seq"])
    assert s["episodes"] == list(range(k)) and s["seq"] == list(range(m))
    assert m == 0 or s["last_transfer_episode"] < k
    for done, seen in s["checkpoint"]:
        assert done <= k and seen <= m
    return s


def wait_for_checkpoint_past(url: str, done: int, proc: subprocess.Popen) -> None:
    """Poll until the run's checkpoint is past ``done`` episodes (the process is writing rounds)."""
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no progress"
        try:
            ckpt = state(url)["checkpoint"]
        except DBAPIError:  # tables not there yet
            ckpt = []
        if ckpt and ckpt[0][0] > done:
            return
        time.sleep(0.02)


def same_as(summary: dict, reference: dict, url: str) -> None:
    assert {k: summary[k] for k in SAME} == {k: reference[k] for k in SAME}
    engine = make_engine(url)
    log = load_transfers(engine, summary["run_id"])
    assert hashlib.sha256(log.tobytes()).hexdigest() == reference["ledger_hash"]
    assert state(url)["episodes"] == list(range(reference["episodes"]))
    engine.dispose()


def test_killed_at_random_moments_and_inside_a_write_resumes_to_the_same_ledger(tmp_path):
    """Kill, resume, kill inside a write, resume, kill, resume to the end: the uninterrupted run's ledger."""
    episodes, seed = 400, 5
    sets = ["--set", f"run.episodes={episodes}", "--set", "run.checkpoint_every=3", "--seed", str(seed)]
    reference = run_experiment(load("relay", [f"run.episodes={episodes}", "run.checkpoint_every=3"], seed=seed),
                               f"sqlite:///{tmp_path / 'reference.db'}", progress=False)
    url = f"sqlite:///{tmp_path / 'crash.db'}"
    rng = random.Random(9)

    proc = start("run", "relay", *sets, "--db", url)  # 1. a random moment while rounds are written
    wait_for_checkpoint_past(url, 0, proc)
    time.sleep(rng.uniform(0, 0.3))
    kill(proc)
    s = whole_rounds(url)
    [(run_id,)] = s["runs"]

    done = s["checkpoint"][0][0]  # 2. inside the second write of the resumed process (the first committed)
    kill_inside_write(start("resume", run_id, "--db", url, fault=2))
    s = whole_rounds(url)
    assert len(s["episodes"]) == done + 3 == s["checkpoint"][0][0], "the hung write's rounds must not be there"

    done = s["checkpoint"][0][0]  # 3. a random moment in the next resume
    proc = start("resume", run_id, "--db", url)
    wait_for_checkpoint_past(url, done, proc)
    time.sleep(rng.uniform(0, 0.3))
    kill(proc)
    whole_rounds(url)

    final = subprocess.run([str(CATALLAX), "resume", run_id, "--db", url, "--json"], capture_output=True, text=True,
                           timeout=120, check=False)
    assert final.returncode == 0, final.stderr
    summary = json.loads(final.stdout.strip().splitlines()[-1])
    assert summary["run_id"] == run_id
    same_as(summary, reference, url)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_killed_inside_its_first_write_resumes_from_scratch(kind, tmp_path, request):
    """Killed while the first round (its births, transfers and first checkpoint) is being written: the run row
    exists, nothing else does; resume starts the run over under the same id and ends as the reference."""
    episodes, seed = 100, 3
    url = f"sqlite:///{tmp_path / 'crash.db'}" if kind == "sqlite" else request.getfixturevalue("postgres").new_database()
    reference = run_experiment(load("relay", [f"run.episodes={episodes}"], seed=seed),
                               f"sqlite:///{tmp_path / 'reference.db'}", progress=False)
    kill_inside_write(start("run", "relay", "--set", f"run.episodes={episodes}", "--seed", str(seed), "--db", url,
                            fault=1))
    s = whole_rounds(url)
    assert len(s["runs"]) == 1 and s["episodes"] == s["seq"] == s["checkpoint"] == []
    summary = resume_experiment(s["runs"][0][0], url, progress=False)
    same_as(summary, reference, url)


def test_checkpoints_by_time_and_a_kill_between_two_resume_to_the_same_ledger(tmp_path):
    """The default: a checkpoint every run.checkpoint_seconds (here 0.2 s), written with the rounds since the one
    before. SIGKILLed between two, the database holds exactly the rounds up to the last; resume ends as the reference."""
    episodes, seed = 3000, 6
    sets = [f"run.episodes={episodes}", "run.checkpoint_seconds=0.2"]
    reference = run_experiment(load("relay", sets, seed=seed), f"sqlite:///{tmp_path / 'reference.db'}", progress=False)
    url = f"sqlite:///{tmp_path / 'crash.db'}"
    proc = start("run", "relay", *(a for s in sets for a in ("--set", s)), "--seed", str(seed), "--db", url)
    wait_for_checkpoint_past(url, 0, proc)
    time.sleep(0.1)  # half-way to the next: the rounds since the first are in the process's memory only
    kill(proc)
    s = whole_rounds(url)
    [(run_id,)], [(done, seen)] = s["runs"], s["checkpoint"]
    assert 0 < done < episodes and len(s["episodes"]) == done and len(s["seq"]) == seen, "rows past the checkpoint"

    final = subprocess.run([str(CATALLAX), "resume", run_id, "--db", url, "--json"], capture_output=True, text=True,
                           timeout=120, check=False)
    assert final.returncode == 0, final.stderr
    same_as(json.loads(final.stdout.strip().splitlines()[-1]), reference, url)
