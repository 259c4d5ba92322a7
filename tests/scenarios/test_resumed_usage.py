"""An LLM run killed and resumed reports the whole run's LLM usage: its rounds' tokens and engine time are stored
with them (market/schema.py RoundUsage), and the resumed process's engine starts from them.

Before, ``llm_tokens`` and ``backend_seconds`` were the engine's counters in the process that finished the run: a
resumed run reported only its own part. wordmath at toy size on the hf backend: two rounds, killed inside the second
round's write (the first is checkpointed), resumed; its summary's token counts equal an uninterrupted run's.
"""

import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CATALLAX = str(Path(sys.executable).with_name("catallax"))
TOY = [x for kv in ("run.episodes=8", "market.batch=4", "wordmath.heldout=2", "population.initial_agents=4",
                    "population.min_agents=2", "run.checkpoint_every=1") for x in ("--set", kv)]


def catallax(*argv: str, env=None) -> dict:
    done = subprocess.run([CATALLAX, *argv, "--json"], capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_resumed_llm_run_reports_the_whole_run_s_tokens(tmp_path):
    whole = catallax("run", "wordmath", *TOY, "--out", str(tmp_path / "whole"))

    # round 1 written, hang inside round 2's write (the test-only hook of tests/scenarios/faults.py)
    proc = subprocess.Popen([sys.executable, "-m", "tests.scenarios.faults", "2", "run", "wordmath", *TOY,
                             "--out", str(tmp_path / "cut")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2])
    try:
        for line in proc.stderr:
            if "fault injection: hanging inside write" in line:
                break
        else:
            pytest.fail(f"no fault-injection line; the run ended with {proc.wait()}")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    db = tmp_path / "cut" / "catallax.db"
    with sqlite3.connect(db) as conn:
        run_id, = conn.execute("SELECT id FROM run").fetchone()
        stored = conn.execute("SELECT episode, backend, prompt_tokens + completion_tokens FROM round_usage").fetchall()
    assert [(e, b) for e, b, _ in stored] == [(0, "hf:smollm2")] and stored[0][2] > 0  # the checkpointed round's

    resumed = catallax("resume", run_id, "--out", str(tmp_path / "cut"))
    assert resumed["ledger_hash"] == whole["ledger_hash"]
    assert resumed["llm_tokens"] == whole["llm_tokens"] and resumed["completion_tokens"] == whole["completion_tokens"]
    assert resumed["llm_tokens"] > stored[0][2]
    with sqlite3.connect(db) as conn:
        rounds = conn.execute("SELECT episode FROM round_usage ORDER BY episode").fetchall()
    assert rounds == [(0,), (4,)]  # one row a round: the resumed process wrote the second

    from market.store import export_run, import_run, make_engine  # a sweep ships the rows to its driver's database

    rows = export_run(make_engine(f"sqlite:///{db}"), run_id)
    target = make_engine(f"sqlite:///{tmp_path / 'target.db'}")
    import_run(target, rows)
    assert len(rows["round_usage"]) == 2 and export_run(target, run_id) == rows
