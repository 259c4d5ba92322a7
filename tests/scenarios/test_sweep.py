"""`catallax sweep` on real Ray (2 CPUs): 2 grid points x 3 seeds of relay land 6 whole runs, once each, in
SQLite (rows shipped to the driver) and in PostgreSQL (workers write); a failing run is reported, the rest land.

One local Ray instance serves the module (starting Ray costs seconds): the CLI in a subprocess joins it with
--address, the in-process calls reuse it.
"""

import csv
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from sqlalchemy import func
from sqlmodel import Session, select

from market.store import (
    Agent,
    Checkpoint,
    Episode,
    Run,
    Transfer,
    load_transfers,
    make_engine,
)
from scenarios.cli.main import main
from scenarios.run.config import load
from scenarios.run.runner import run_experiment
from scenarios.run.sweep import read_auth_again

CATALLAX = Path(sys.executable).parent / "catallax"
EPISODES = 30
GRID = ["--grid", "market.payment=bucket_brigade,final_only", "--seeds", "3", "--set", f"run.episodes={EPISODES}"]


@pytest.fixture(scope="module")
def ray_address():
    # as `catallax sweep` starts its own (scenarios/run/sweep.py): on 127.0.0.1, with a token of its own, which
    # the CLI in a subprocess inherits to join; set before Ray is imported, which is when Ray reads them. Ray's
    # memory monitor is off in this test cluster: it counts the whole machine's memory, and while the suite's other
    # worker held most of it, it killed these small sweeps' tasks and retried them without end until the tests
    # timed out (a full-suite run on 2 cores, 24 GiB); a real shortage still fails the task, through the kernel
    settings = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32),
                "RAY_memory_monitor_refresh_ms": "0"}
    saved = {k: os.environ.get(k) for k in settings}
    imported = "ray" in sys.modules  # by an earlier test (vLLM imports Ray): it read its auth settings then
    os.environ.update(settings)
    ray = pytest.importorskip("ray")
    if imported:
        read_auth_again()
    temp_dir = tempfile.mkdtemp(prefix="catallax-ray-test-")
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=temp_dir, log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)
        for key, value in saved.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)


def check_landed(result: dict, db_url: str) -> None:
    """Six finished runs of this sweep, each whole (every transfer, episode, agent, checkpoint) and once."""
    engine = make_engine(db_url)
    with Session(engine) as s:
        runs = s.exec(select(Run).where(Run.sweep == result["sweep"])).all()
        counts = {model.__tablename__: dict(s.exec(select(model.run_id, func.count()).group_by(model.run_id)).all())
                  for model in (Transfer, Episode, Agent, Checkpoint)}
    assert len(runs) == 6 and {r.status for r in runs} == {"finished"}
    assert sorted(r.id for r in runs) == sorted(r["run_id"] for r in result["runs"])
    assert sorted((json.loads(r.config)["market"]["payment"], r.seed) for r in runs) == sorted(
        (p, seed) for p in ("bucket_brigade", "final_only") for seed in range(3))
    for run in runs:
        summary = json.loads(run.summary)
        log = load_transfers(engine, run.id)
        assert counts["transfer"][run.id] == log.size == summary["transfers"]  # no row lost, none twice
        assert hashlib.sha256(log.tobytes()).hexdigest() == run.ledger_hash == summary["ledger_hash"]
        assert counts["episode"][run.id] == EPISODES and counts["checkpoint"][run.id] == 1
        assert counts["agent"][run.id] >= summary["population"]
    engine.dispose()


def test_a_sweep_joins_a_token_cluster_from_a_process_that_imported_ray_first(ray_address, tmp_path):
    """Ray reads its auth settings when first imported; a caller that imported it before they were set (vLLM
    imports Ray) would join without the token. The sweep makes Ray read them again."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")} | {"TOKEN": os.environ["RAY_AUTH_TOKEN"]}
    code = ("import os, sys, ray; os.environ.update(RAY_AUTH_MODE='token', RAY_AUTH_TOKEN=os.environ['TOKEN']); "
            "from scenarios.cli.main import main; sys.exit(main(['sweep', 'relay', '--set', 'run.episodes=4', "
            f"'--seeds', '2', '--address', {ray_address!r}, '--out', {str(tmp_path / 'out')!r}]))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and "InvalidAuthToken" not in proc.stderr, proc.stderr[-2000:]


def test_sweep_lands_six_runs_in_sqlite(ray_address, tmp_path):
    out = tmp_path / "out"
    db_url = f"sqlite:///{tmp_path / 'sweep.db'}"
    proc = subprocess.run([str(CATALLAX), "sweep", "relay", *GRID, "--address", ray_address, "--db", db_url,
                           "--out", str(out), "--json"], capture_output=True, text=True, cwd=tmp_path, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    check_landed(result, db_url)

    # the same (point, seed) run directly gives the same ledger: a sweep changes where runs happen, not what
    direct = run_experiment(load("relay", [f"run.episodes={EPISODES}", "market.payment=final_only"], seed=2),
                            f"sqlite:///{tmp_path / 'direct.db'}", progress=False)
    swept = {(r["market.payment"], r["seed"]): r["ledger_hash"] for r in result["runs"]}
    assert swept[("final_only", 2)] == direct["ledger_hash"]

    with open(result["csv"]) as f:
        rows = list(csv.DictReader(f))
    assert [(r["market.payment"], r["runs"], r["failed"]) for r in rows] == [
        ("bucket_brigade", "3", "0"), ("final_only", "3", "0")]
    assert {"success_rate_mean", "success_rate_std", "population_mean"} <= rows[0].keys()
    assert "success_rate" in proc.stdout  # the table is printed too


def test_sweep_lands_six_runs_in_postgres(ray_address, postgres, tmp_path, capsys):
    db_url = postgres.new_database()
    code = main(["sweep", "relay", *GRID, "--db", db_url, "--out", str(tmp_path / "out"), "--json"])
    assert code == 0
    check_landed(json.loads(capsys.readouterr().out.strip().splitlines()[-1]), db_url)


def test_a_failed_run_is_reported_and_the_others_land(ray_address, tmp_path, capsys):
    """10**14 agents pass validation but cannot be allocated: those runs fail in their workers, the rest finish."""
    db_url = f"sqlite:///{tmp_path / 'sweep.db'}"
    code = main(["sweep", "relay", "--grid", "population.initial_agents=8,100000000000000", "--seeds", "2",
                 "--set", "run.episodes=10", "--db", db_url, "--out", str(tmp_path / "out"), "--json"])
    captured = capsys.readouterr()
    result = json.loads(captured.out.strip().splitlines()[-1])
    assert code == 1
    assert len(result["runs"]) == 2 and {r["population.initial_agents"] for r in result["runs"]} == {"8"}
    assert len(result["failed"]) == 2 and all("Unable to allocate" in f["error"] for f in result["failed"])
    assert captured.err.count("failed: ") == 2
    failed_row = next(r for r in result["table"] if r["population.initial_agents"] != "8")
    assert failed_row["runs"] == 0 and failed_row["failed"] == 2
    with Session(make_engine(db_url)) as s:  # only the finished runs are in the database
        assert sorted(s.exec(select(Run.status)).all()) == ["finished", "finished"]


@pytest.mark.parametrize("args, named", [
    (["--grid", "market.paymnt=a,b"], "market.paymnt"),
    (["--grid", "market.payment=bucket_brigade,gift"], "market.payment = 'gift'"),
    (["--grid", "market.payment"], "--grid market.payment"),
    (["--grid", "market.rent=0.1,"], "--grid market.rent=0.1,"),
    (["--grid", "run.seed=1,2"], "--seeds"),
    (["--seeds", "0"], "--seeds 0"),
])
def test_bad_sweep_input_exits_2_before_ray_starts(tmp_path, capsys, args, named):
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_:
        main(["sweep", "relay", *args, "--out", str(out)])
    assert exit_.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], lines
    assert not out.exists()
