"""Nothing a sweep starts listens beyond this machine: during a real local ``catallax sweep`` every listening
socket of the sweep's process tree (the driver, Ray's GCS, raylet, agents and workers) is on a loopback
address; and joining a cluster the user names needs Ray's token authentication."""

import ipaddress
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.reliability.test_stored_code import cli

CATALLAX = Path(sys.executable).parent / "catallax"


def listening(root: psutil.Process) -> set[tuple[str, int, str]]:
    """(address, port, process name) of every TCP socket listening in ``root``'s process tree now."""
    found = set()
    for proc in [root, *root.children(recursive=True)]:
        try:
            for conn in proc.net_connections(kind="inet"):
                if conn.status == psutil.CONN_LISTEN:
                    found.add((conn.laddr.ip, conn.laddr.port, proc.name()))
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    return found


def loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip.split("%")[0])
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1
    return (mapped or address).is_loopback


@pytest.mark.slow
def test_a_local_sweep_listens_on_loopback_only(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}  # as a user's shell would have it
    proc = subprocess.Popen([str(CATALLAX), "sweep", "relay", "--set", "run.episodes=10", "--seeds", "2",
                             "--out", str(tmp_path / "out")], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    root, seen = psutil.Process(proc.pid), set()
    try:
        while proc.poll() is None:
            seen |= listening(root)
            time.sleep(0.1)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert {name for _, _, name in seen} & {"gcs_server", "raylet"}, seen  # Ray's servers were seen listening
    assert not {s for s in seen if not loopback(s[0])}, sorted(seen)


@pytest.mark.parametrize("env, says", [({"RAY_AUTH_MODE": "disabled"}, "RAY_AUTH_MODE=disabled"),
                                       ({}, "no Ray authentication token")])
def test_joining_a_named_cluster_needs_token_authentication(tmp_path, capsys, monkeypatch, env, says):
    for key in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.ray/auth_token
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    code, _, err = cli(["sweep", "relay", "--set", "run.episodes=4", "--address", "192.0.2.1:6379",
                        "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err
