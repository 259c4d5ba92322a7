"""``catallax run SCENARIO``: run one scenario and persist it; ``--json`` prints the summary last."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from market.store import StoreError
from scenarios.run.config import ConfigError, load
from scenarios.run.runner import default_db, run_experiment


def add_parser(subparsers):
    p = subparsers.add_parser("run", help="run a scenario")
    p.add_argument("scenario", help="a scenario name under scenarios/ (e.g. relay) or a .toml file")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key, e.g. --set market.payment=final_only (repeatable)")
    p.add_argument("--seed", type=int, help="the run's seed (overrides run.seed)")
    p.add_argument("--db", help="SQLAlchemy URL of the results database (default: sqlite file in --out)")
    p.add_argument("--out", type=Path, default=Path("runs"), help="output folder (default: runs/)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON line last")
    return p


def database_url(db: str | None, out: Path, must_exist: bool = False) -> str:
    """The --db URL, checked, or the default SQLite file in --out. ``must_exist``: a command that only
    reads (resume, report, skills) must not create an empty SQLite database."""
    url = db or default_db(out)
    try:
        parsed = make_url(url)
        parsed.get_dialect()
    except ArgumentError:
        raise ConfigError(f"--db {url}: not a database URL (e.g. sqlite:///runs/catallax.db)") from None
    except NoSuchModuleError:
        raise ConfigError(f"--db {url}: unknown database type {parsed.drivername!r}") from None
    sqlite_file = parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:")
    if db and sqlite_file and not Path(parsed.database).parent.is_dir():
        raise ConfigError(f"--db {url}: folder {Path(parsed.database).parent} does not exist")
    if must_exist and sqlite_file and not Path(parsed.database).is_file():
        raise ConfigError(f"--db {url}: no such database file")
    return url


def handle(args) -> int:
    exp = load(args.scenario, args.overrides, seed=args.seed)
    db_url = database_url(args.db, args.out)
    if args.db is None:
        args.out.mkdir(parents=True, exist_ok=True)
    with store_errors():
        summary = run_experiment(exp, db_url, progress=sys.stderr.isatty() or not args.json)
    print_summary(summary, args.json)
    return 0


@contextmanager
def store_errors():
    """A database that cannot be opened (or has an unknown schema) is bad input: one line, exit 2."""
    try:
        yield
    except StoreError as err:
        raise ConfigError(str(err)) from None


def print_summary(summary: dict, as_json: bool) -> None:
    """One JSON line (machine-readable, last on stdout) or an aligned key: value listing."""
    if as_json:
        print(json.dumps(summary))
    else:
        for key, value in summary.items():
            print(f"{key:>16}: {value}")
