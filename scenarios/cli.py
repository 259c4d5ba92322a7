"""The ``catallax`` command line.

    catallax run SCENARIO [--set key=value ...] [--seed N] [--db URL] [--out DIR] [--json]

With ``--json`` the last line of stdout is the run's summary as one JSON
object. A bad scenario, key, value or URL prints one error line naming it and
exits with code 2 before anything is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from scenarios.config import ConfigError, load
from scenarios.runner import default_db, run_experiment


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="catallax", description="Economies of agents.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a scenario")
    run.add_argument("scenario", help="a scenario name under scenarios/ (e.g. relay) or a .toml file")
    run.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                     help="override a config key, e.g. --set market.payment=final_only (repeatable)")
    run.add_argument("--seed", type=int, help="the run's seed (overrides run.seed)")
    run.add_argument("--db", help="SQLAlchemy URL of the results database (default: sqlite file in --out)")
    run.add_argument("--out", type=Path, default=Path("runs"), help="output folder (default: runs/)")
    run.add_argument("--json", action="store_true", help="print the summary as one JSON line last")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        exp = load(args.scenario, args.overrides, seed=args.seed)
        db_url = args.db or default_db(args.out)
        try:
            make_url(db_url)
        except ArgumentError:
            raise ConfigError(f"--db {db_url}: not a database URL (e.g. sqlite:///runs/catallax.db)") from None
    except ConfigError as err:
        parser.exit(2, f"catallax: error: {err}\n")

    if args.db is None:
        args.out.mkdir(parents=True, exist_ok=True)
    summary = run_experiment(exp, db_url, progress=sys.stderr.isatty() or not args.json)
    if args.json:
        print(json.dumps(summary))
    else:
        for key, value in summary.items():
            print(f"{key:>16}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
