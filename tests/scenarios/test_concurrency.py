"""Concurrent writers: several processes write runs into one fresh database at the same moment (a SQLite
file; a PostgreSQL database): every run lands whole, nothing is lost, nobody sees "database is locked".

A helper process imports the stack once and forks the writers (cheap), which wait at a barrier and then
start together: they create the schema at the same instant (the store's schema lock) and commit one
transaction per episode, checkpoint included, so their writes interleave many times.
"""

import hashlib
import json
import subprocess
import sys

from sqlmodel import Session, select

from market.store import Run, load_transfers, make_engine

WRITERS, EPISODES = 4, 60

HELPER = """
import json, multiprocessing as mp, sys, traceback
from scenarios.run.config import load
from scenarios.run.runner import run_experiment

url, writers, episodes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def write(seed, barrier, results):
    exp = load("relay", [f"run.episodes={episodes}", "run.checkpoint_every=1"], seed=seed)
    barrier.wait()
    try:
        results.put(run_experiment(exp, url, progress=False))
    except Exception:
        results.put({"error": traceback.format_exc()})

ctx = mp.get_context("fork")
barrier, results = ctx.Barrier(writers), ctx.Queue()
procs = [ctx.Process(target=write, args=(seed, barrier, results)) for seed in range(writers)]
for p in procs:
    p.start()
print(json.dumps([results.get(timeout=240) for _ in procs]))
for p in procs:
    p.join()
sys.exit(max(p.exitcode for p in procs))
"""


def test_concurrent_writers_lose_nothing(db_url):
    proc = subprocess.run([sys.executable, "-c", HELPER, db_url, str(WRITERS), str(EPISODES)], capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    summaries = {s.get("run_id"): s for s in json.loads(proc.stdout.strip().splitlines()[-1])}
    errors = [s["error"] for s in summaries.values() if "error" in s]
    assert not errors, errors[0]  # e.g. "database is locked"

    engine = make_engine(db_url)
    with Session(engine) as s:
        runs = s.exec(select(Run)).all()
    assert sorted(r.id for r in runs) == sorted(summaries) and {r.status for r in runs} == {"finished"}
    spans = sorted((r.started_at, r.finished_at) for r in runs)
    overlapping = sum(later[0] < earlier[1] for earlier, later in zip(spans, spans[1:]))
    assert overlapping >= 1, f"no two writers overlapped in time: {spans}"  # a loaded machine may serialise some
    for run_id, summary in summaries.items():
        log = load_transfers(engine, run_id)
        assert log.size == summary["transfers"] and summary["conservation_ok"]
        assert hashlib.sha256(log.tobytes()).hexdigest() == summary["ledger_hash"]
    assert len({s["ledger_hash"] for s in summaries.values()}) == WRITERS  # four seeds, four ledgers
    engine.dispose()
