"""``catallax dashboard [SCENARIO] [--host H] [--port P]``: the live market in the browser
(scenarios/report/dashboard.py).

It listens on 127.0.0.1 unless ``--host`` names another address (``$HOST`` is not read: a shell's or a
container's ``HOST=0.0.0.0`` would open it to the network), accepts websockets from its own pages only, and
sends no telemetry (scenarios/report/dashboard_server.py)."""

from __future__ import annotations

from scenarios.run.config import ConfigError


def add_parser(subparsers):
    p = subparsers.add_parser("dashboard", help="serve the live market dashboard in the browser (127.0.0.1)")
    p.add_argument("scenario", nargs="?", default="relay",
                   help="a built-in scenario that runs on the market (default: relay)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)")
    p.add_argument("--port", type=int, default=8765, help="port (default: 8765)")
    return p


def handle(args) -> int:
    from scenarios.report.dashboard_server import live_scenarios, serve

    if args.scenario not in (known := live_scenarios()):
        raise ConfigError(f"dashboard {args.scenario}: not a scenario the dashboard runs (one of {', '.join(known)})")
    if not 0 < args.port < 65536:
        raise ConfigError(f"--port {args.port}: not a port (1-65535)")
    serve(args.host, args.port, args.scenario)
    return 0
