"""Servers and pool workers die with the process that started them, however it dies: a child Python process
starts a throwaway PostgreSQL server (tests/pg.py), a server through ``serving`` (what ``vllm serve`` and the
dashboard tests use; here a standard-library HTTP server, the same code path) or the pool every sweep and
comparison script runs its jobs in (scenarios/run/sweep.py ``completed``, a worker left idle after its job),
prints the child's pid and is SIGKILLed, so no ``finally`` runs. The child must be gone within a few seconds."""

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tests import pg

STARTERS = {
    "postgres": """
from tests import pg
with pg.cluster() as cluster:
    pid = int((cluster.folder / "data" / "postmaster.pid").read_text().split()[0])
    print(pid, cluster.folder, flush=True)
    import time; time.sleep(600)
""",
    "serving": """
import sys, time
from pathlib import Path
from tests.processes import free_port, serving
port = free_port()
cmd = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)]
with serving(cmd, f"http://127.0.0.1:{port}/", Path(sys.argv[1]) / "server.log", timeout=60) as proc:
    print(proc.pid, "-", flush=True)
    time.sleep(600)
""",
    "pool": """
import os, time
from scenarios.run.sweep import completed
jobs = completed(os.getpid, [(), ()], workers=2)
_, pid, _ = next(jobs)  # the pool stays up while the caller holds the generator
print(pid, "-", flush=True)
time.sleep(600)
""",
}


def alive(pid: int) -> bool:
    """Running (a zombie, dead but not yet reaped by init, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("server", sorted(STARTERS))
def test_a_child_is_stopped_when_its_starter_is_killed(server, tmp_path):
    if server == "postgres" and pg.binaries() is None:
        pytest.skip("PostgreSQL server binaries not found (.ci/run installs them)")
    folder = "-"
    starter = subprocess.Popen([sys.executable, "-c", STARTERS[server], str(tmp_path)], stdout=subprocess.PIPE,
                               text=True, env=os.environ | {"PYTHONPATH": os.getcwd()})
    try:
        pid, folder = starter.stdout.readline().split()
        pid = int(pid)
        assert alive(pid)
        starter.send_signal(signal.SIGKILL)
        starter.wait()
        deadline = time.monotonic() + 10
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(pid), f"{server} (pid {pid}) outlived the process that started it"
    finally:
        starter.kill()
        starter.wait()
        if folder != "-":  # the cluster's folder, which the killed starter could not remove
            shutil.rmtree(folder, ignore_errors=True)
