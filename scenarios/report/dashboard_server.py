"""Serve the live dashboard (scenarios/report/dashboard.py) on this machine only, to pages of its own origin.

``solara run`` takes its address from ``$HOST`` when it is set (a shell or a container often sets it to
``0.0.0.0``), accepts a websocket from any page the browser has open (another site's script could drive the
market) and reports usage to Mixpanel and asks PyPI for a newer version of itself. :func:`serve` runs the same server with the address the caller names
(the CLI's default is 127.0.0.1, whatever ``$HOST`` says), every websocket whose ``Origin`` is not the address
the page was loaded from refused (and, on loopback, every ``Host`` that is not a loopback name, so a
DNS-rebinding page is refused too), and telemetry and the version check off: the dashboard works offline.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from urllib.parse import urlsplit

from scenarios.registry import SCENARIO_DIR, SCENARIOS, get_scenario

DASHBOARD = Path(__file__).with_name("dashboard.py")
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def live_scenarios() -> list[str]:
    """The scenarios the dashboard runs: those with a scenario file that run on ``MarketModel`` (not those with a
    model of their own)."""
    return [n for n in sorted(SCENARIOS)
            if (SCENARIO_DIR / f"{n}.toml").is_file() and get_scenario(n).own_model is None]


def telemetry_off() -> None:
    """Solara's usage reports (Mixpanel) off, before its server starts or any session opens."""
    os.environ["SOLARA_TELEMETRY_MIXPANEL_ENABLE"] = "False"
    from solara.server import settings

    settings.telemetry.mixpanel_enable = False


def loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


class SameOrigin:
    """ASGI middleware: a websocket is accepted only from a page of the server's own origin (its ``Origin``
    names the ``Host`` the request was sent to) and, on a loopback server, only under a loopback name; any
    other upgrade is answered 403 before the application sees it. Plain HTTP passes (a page read is no action)."""

    def __init__(self, app, host: str, port: int):
        self.app, self.port = app, port
        self.names = LOOPBACK_NAMES if loopback(host) else None

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and not self.allowed(dict(scope.get("headers") or [])):
            await send({"type": "websocket.close", "code": 1008})  # before accept: the client gets HTTP 403
            return
        await self.app(scope, receive, send)

    def allowed(self, headers: dict) -> bool:
        origin, host = headers.get(b"origin", b"").decode("latin-1"), headers.get(b"host", b"").decode("latin-1")
        if not origin or urlsplit(origin).netloc.lower() != host.lower():
            return False
        return self.names is None or host.lower() in {f"{name}:{self.port}" for name in self.names}


def serve(host: str, port: int, scenario: str) -> None:
    """Run the dashboard's server in this process until it is stopped (Ctrl-C)."""
    os.environ["CATALLAX_DASHBOARD"] = scenario
    os.environ["SOLARA_APP"] = str(DASHBOARD)  # read when solara's server module loads, which the wrapper needs first
    telemetry_off()
    import solara.__main__ as solara_cli
    import solara.server.starlette as solara_app

    solara_app.app = SameOrigin(solara_app.app, host, port)  # uvicorn loads "solara.server.starlette:app"
    solara_cli.run.main([str(DASHBOARD), "--host", host, "--port", str(port), "--no-open",
                          "--no-check-version"], prog_name="catallax dashboard")
