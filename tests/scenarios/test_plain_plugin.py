"""A rule plugin written against scenario interface 1 as a plain class (reset/observe/step/horizon/solved, no base
class) runs to the end and resumes, as it did before the market's checkpoints called the world's optional hooks.

The file is written outside the package and run through the ``catallax`` script, as its author would.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.scenarios.ladder import CLIMBERS, ladder

CATALLAX = str(Path(sys.executable).with_name("catallax"))

WORLD = '''
"""Three rungs, one climber each; a plain class, as interface 1 allows."""
import numpy as np
from pydantic.dataclasses import dataclass

from agents import RulePolicy, RuleSpace

CATALLAX_API = 1


@dataclass
class Config:
    rungs: int = 3

''' + ladder("World", "") + '''

def build(cfg):
    space = ''' + CLIMBERS + '''
    return World(cfg), RulePolicy(space)


def metrics(model, episodes, cfg):
    return {"climbed": sum(e["success"] for e in episodes) / len(episodes)}
'''


def catallax(folder: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([CATALLAX, *argv], cwd=folder, capture_output=True, text=True, timeout=300)


def test_a_plain_class_world_runs_to_the_end_and_conserves_money(tmp_path):
    (tmp_path / "plain.py").write_text(WORLD)
    done = catallax(tmp_path, "run", "plain.py", "--set", "run.episodes=40", "--set", "market.batch=4",
                    "--set", "run.checkpoint_every=2", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["conservation_ok"] is True and summary["episodes"] == 40 and 0 <= summary["climbed"] <= 1


def test_a_plain_class_world_killed_mid_run_resumes_to_the_uninterrupted_hash(tmp_path):
    (tmp_path / "plain.py").write_text(WORLD)
    sets = ["--set", "run.episodes=2000", "--set", "market.batch=4", "--set", "run.checkpoint_every=1"]
    whole = json.loads(catallax(tmp_path, "run", "plain.py", *sets, "--json", "--out", "whole").stdout.splitlines()[-1])
    proc = subprocess.Popen([CATALLAX, "run", "plain.py", *sets, "--out", "cut"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = tmp_path / "cut" / "catallax.db"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not _checkpointed(db):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    run_id, status = _run(db)
    assert status == "running"  # killed mid-run, past a checkpoint
    done = catallax(tmp_path, "resume", run_id, "--json", "--out", "cut")
    assert done.returncode == 0, done.stderr[-2000:]
    resumed = json.loads(done.stdout.strip().splitlines()[-1])
    assert resumed["conservation_ok"] is True and resumed["ledger_hash"] == whole["ledger_hash"]


def _checkpointed(db: Path) -> bool:
    import sqlite3

    if not db.exists():
        return False
    try:
        with sqlite3.connect(db, timeout=1) as conn:
            return conn.execute("SELECT count(*) FROM checkpoint").fetchone()[0] > 0
    except sqlite3.Error:
        return False


def _run(db: Path) -> tuple[str, str]:
    import sqlite3

    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT id, status FROM run").fetchone()


def test_a_plain_world_that_cannot_take_the_default_hooks_is_refused_at_load_naming_one(tmp_path):
    slots = "class World:\n    __slots__ = (\"rungs\", \"horizon\", \"at\")\n\n"
    (tmp_path / "slotted.py").write_text(WORLD.replace("class World:\n", slots))
    done = catallax(tmp_path, "run", "slotted.py", "--set", "run.episodes=8", "--set", "market.batch=4")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr[-2000:]
    assert "slotted.py: the world has no group (market/protocols.py World)" in done.stderr
    assert not (tmp_path / "runs" / "catallax.db").exists()  # refused before anything was written


def test_a_py_plugins_module_body_runs_once_per_run(tmp_path):
    """The loader, every rule, the model's build and the summary's metrics share the one resolved scenario: the
    plugin's file is executed once per ``catallax run``, named directly or by a scenario file beside it."""
    counted = "from pathlib import Path\nPath('imports.txt').open('a').write('x')\n"
    (tmp_path / "counted.py").write_text(WORLD.replace("CATALLAX_API = 1\n", "CATALLAX_API = 1\n" + counted))
    (tmp_path / "lab.toml").write_text('[run]\nscenario = "counted.py"\nepisodes = 8\n\n[market]\nbatch = 4\n')
    for argv in (["counted.py", "--set", "run.episodes=8", "--set", "market.batch=4"], ["lab.toml"]):
        (tmp_path / "imports.txt").write_text("")
        done = catallax(tmp_path, "run", *argv, "--json", "--out", f"out-{argv[0]}")
        assert done.returncode == 0, done.stderr[-2000:]
        assert (tmp_path / "imports.txt").read_text() == "x", argv
