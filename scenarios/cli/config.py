"""``catallax config show SCENARIO [--set key=value ...]``: the effective config a run of it would store.

Every key of every section, as TOML: the values the file and the ``--set`` give, the dataclass defaults,
and the defaults derived from other keys (scenarios/run/derived.py), each of those marked with what it
replaced, so what a run reads is never a guess. ``--json`` prints the config as the run stores it.
"""

from __future__ import annotations

import json

from scenarios.run.config import load


def add_parser(subparsers):
    p = subparsers.add_parser("config", help="show a scenario's effective config")
    actions = p.add_subparsers(dest="action", required=True)
    show = actions.add_parser("show", help="print the effective config a run would store")
    show.add_argument("scenario", help="a scenario name under scenarios/ (e.g. relay) or a .toml file")
    show.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                      help="override a config key, as catallax run does (repeatable)")
    show.add_argument("--seed", type=int, help="the run's seed (overrides run.seed)")
    show.add_argument("--json", action="store_true", help="one JSON object, as the run stores its config")
    return p


def handle(args) -> int:
    exp = load(args.scenario, args.overrides, seed=args.seed)
    config = exp.to_dict()
    if args.json:
        print(json.dumps(config))
        return 0
    print(f"# {args.scenario}: the effective config (derived: a default set from other keys)")
    for name, table in config.items():
        print("\n".join(toml_lines(name, table, exp.derived)))
    return 0


def toml_lines(name: str, table: dict, derived: dict) -> list[str]:
    """``table`` as a TOML table ``[name]``, a nested dict as its own table after it; a key without a value
    (None) as a comment, TOML having no null; a key in ``derived`` marked with the value it replaced."""
    lines, nested = ["", f"[{name}]"], []
    for key, value in table.items():
        if isinstance(value, dict):
            nested.append((f"{name}.{key}", value))
        elif value is None:
            lines.append(f"# {key} unset")
        else:
            note = f"  # derived (parsed: {_toml(derived[f'{name}.{key}'][0])})" if f"{name}.{key}" in derived else ""
            lines.append(f"{key} = {_toml(value)}{note}")
    for sub, value in nested:
        lines += toml_lines(sub, value, derived)
    return lines


def _toml(value) -> str:
    """A scalar or a list as a TOML literal (JSON's strings, numbers and arrays are TOML's; true/false too)."""
    return json.dumps(value, ensure_ascii=False)
