"""The dashboard's server (``catallax dashboard``): with ``HOST=0.0.0.0`` in the environment it listens on
loopback only, a websocket upgrade from a foreign page's ``Origin`` (or a rebinding ``Host``) is refused with
403 while one from its own page is not, and Solara's telemetry is off. A real server, real sockets."""

import os
import socket
import sys

import pytest

from tests.processes import free_port, serving

pytest.importorskip("solara")


def listening(port: int) -> set[str]:
    """The local addresses of sockets listening on ``port`` (from /proc/net/tcp and tcp6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in open(table).read().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


def upgrade(port: int, origin: str, host: str | None = None) -> str:
    """The status line the server answers a websocket upgrade of a kernel channel with."""
    request = (f"GET /jupyter/api/kernels/k1/channels?session_id=s1 HTTP/1.1\r\nHost: {host or f'127.0.0.1:{port}'}\r\n"
               f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
               f"Sec-WebSocket-Version: 13\r\nOrigin: {origin}\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(request.encode())
        return s.recv(4096).decode("latin-1").split("\r\n")[0]


def test_the_dashboard_listens_on_loopback_only_and_refuses_foreign_origins(tmp_path):
    port = free_port()
    cmd = [sys.executable, "-m", "scenarios.cli.main", "dashboard", "relay", "--port", str(port)]
    env = os.environ | {"HOST": "0.0.0.0", "SOLARA_HOST": "0.0.0.0"}
    with serving(cmd, f"http://127.0.0.1:{port}/", tmp_path / "dashboard.log", timeout=120, env=env):
        assert listening(port) == {"0100007F"}  # 127.0.0.1, nothing on 0.0.0.0 or ::
        assert " 403 " in upgrade(port, "http://evil.example")
        assert " 403 " in upgrade(port, f"http://rebound.example:{port}", host=f"rebound.example:{port}")
        assert " 403 " not in upgrade(port, f"http://127.0.0.1:{port}")  # its own page's websocket goes through
        log = (tmp_path / "dashboard.log").read_text()
    assert "mixpanel" not in log.lower() and "New version of Solara" not in log  # no version check either


def test_telemetry_is_off_once_the_dashboard_module_is_loaded():
    from solara.server import settings

    from scenarios.report.dashboard_server import telemetry_off

    telemetry_off()
    assert settings.telemetry.mixpanel_enable is False and os.environ["SOLARA_TELEMETRY_MIXPANEL_ENABLE"] == "False"
