"""Ctrl-C and SIGTERM (scenarios/run/interrupt.py): a real `catallax run` gets a real signal mid-run; it
finishes the round, checkpoints, says how to resume, exits 130 / 143; the resume ends with the uninterrupted
run's ledger hash."""

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from scenarios.run.config import load
from scenarios.run.runner import run_experiment
from tests.reliability.test_ownership import first_checkpoint

CATALLAX = Path(sys.executable).parent / "catallax"
SETS = ["run.episodes=1200", "run.checkpoint_every=50"]  # most signals land between checkpoints


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_a_signal_checkpoints_the_run_and_resume_finishes_it(signum, code, tmp_path):
    reference = run_experiment(load("relay", SETS, seed=4), f"sqlite:///{tmp_path / 'ref.db'}", progress=False)
    url = f"sqlite:///{tmp_path / 'c.db'}"
    proc = subprocess.Popen([str(CATALLAX), "run", "relay", "--set", SETS[0], "--set", SETS[1], "--seed", "4",
                             "--db", url, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        run_id = first_checkpoint(url, proc)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err
    lines = err.strip().splitlines()
    assert lines[0] == f"run {run_id}: resume with `catallax resume {run_id}`"
    assert lines[-1] == f"interrupted; resume with `catallax resume {run_id}`" and out == ""

    engine = create_engine(url)
    with engine.connect() as c:  # the last round written is checkpointed; the run is marked, nobody holds it
        (episodes,), = c.execute(text("SELECT count(*) FROM episode")).all()
        assert c.execute(text("SELECT episodes_done FROM checkpoint")).all() == [(episodes,)]
        assert c.execute(text("SELECT status FROM run")).all() == [("interrupted",)]
        assert c.execute(text("SELECT count(*) FROM lease")).scalar() == 0
    engine.dispose()
    assert 0 < episodes < 1200

    resumed = subprocess.run([str(CATALLAX), "resume", run_id, "--db", url, "--json"], capture_output=True, text=True,
                             timeout=120, check=False)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert summary["ledger_hash"] == reference["ledger_hash"] and summary["transfers"] == reference["transfers"]
