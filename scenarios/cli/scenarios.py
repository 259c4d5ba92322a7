"""``catallax scenarios``: what can be run by name: the built-ins, their extra scenario files, the installed plugins."""

from __future__ import annotations

import json

from scenarios.registry import available


def add_parser(subparsers):
    p = subparsers.add_parser("scenarios", help="list the scenarios that can be run by name")
    p.add_argument("--json", action="store_true", help="one JSON list of {name, kind, description}")
    return p


def handle(args) -> int:
    rows = available()
    if args.json:
        print(json.dumps([{"name": n, "kind": k, "description": d} for n, k, d in rows]))
    else:
        width = max(len(n) for n, _, _ in rows)
        for name, kind, description in rows:
            print(f"{name:<{width}}  {kind:<13}  {description}")
        print("\nAlso: a .py file or a dotted module path with the scenario interface (scenarios/registry.py).")
    return 0
