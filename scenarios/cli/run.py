"""``catallax run SCENARIO``: run one scenario and persist it; ``--json`` prints the summary last."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from market.escape import terminal
from market.store import StoreError
from scenarios.run.config import ConfigError, load
from scenarios.run.interrupt import Stop
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


def database_url(db: str | None, out: Path, must_exist: bool = False, durable: bool = False,
                 writes: bool = False) -> str:
    """The --db URL, checked, or the default SQLite file in --out. ``must_exist``: a command that only
    reads (resume, report, skills) must not create an empty SQLite database. ``durable``: a command that
    writes runs (run, sweep) refuses an in-memory database, whose runs could never be resumed or reported,
    and a SQLite file it could not write (checked here, so nothing is half-written). ``writes``: a command that
    writes into an existing database (skills import) checks only the last."""
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
    if durable and parsed.get_backend_name() == "sqlite" and not sqlite_file:
        raise ConfigError(f"--db {url}: an in-memory database is gone when the run ends (it could not be "
                          f"resumed or reported); name a file, e.g. sqlite:///runs/catallax.db")
    if (durable or writes) and sqlite_file and db:
        _writable(Path(parsed.database), f"--db {url}")
    return url


def _writable(path: Path, flag: str) -> None:
    """Refuse a SQLite file that cannot be written, or created in its folder, before anything runs. Tried,
    not inferred from permission bits (root passes those; a read-only filesystem does not); writes nothing.
    The folder is tried too: SQLite writes its journal beside the file."""
    target = path
    try:
        if path.exists():
            with open(path, "r+b"):
                pass
        target = path.parent
        with tempfile.TemporaryFile(dir=path.parent):
            pass
    except OSError as err:
        raise ConfigError(f"{flag}: cannot write {target} ({err.strerror})") from None


def output_folder(out: Path) -> None:
    """Create --out (the default database's folder) or refuse it in one line: a file, or not creatable/writable."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except FileExistsError:
        raise ConfigError(f"--out {out}: not a folder") from None
    except OSError as err:
        raise ConfigError(f"--out {out}: cannot write there ({err.strerror})") from None


def handle(args) -> int:
    exp = load(args.scenario, args.overrides, seed=args.seed)
    db_url = database_url(args.db, args.out, durable=True)
    if args.db is None:
        output_folder(args.out)
    with store_errors(), Stop() as stop, summary_alone():  # Ctrl-C, SIGTERM: checkpointed at a round boundary, exit 130 / 143
        summary = run_experiment(exp, db_url, progress=sys.stderr.isatty(), stop=stop)  # no \r frames into a pipe
    if stop.interrupted:
        return stop.interrupted.exit_code
    print_summary(summary, args.json)
    return 0


@contextmanager
def summary_alone():
    """While a run executes, file descriptor 1 is stderr, so whatever an LLM engine or its worker processes
    print (vLLM logs to stdout by default; children inherit the descriptor) lands there and stdout holds the
    summary alone, printed after. At the end every engine the run made is closed: a live vLLM engine's
    processes and threads keep the command from exiting (those made before it began, in a notebook, are kept)."""
    held = factory.engines() if (factory := sys.modules.get("agents.backends.factory")) else set()
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no descriptor 1 (a host that replaced it): nothing to keep apart
        saved = None
    if saved is not None:
        os.dup2(2, 1)
    try:
        yield
    finally:
        try:
            if factory := sys.modules.get("agents.backends.factory"):  # an engine was made only where it was imported
                factory.close_engines(keep=held)
        finally:
            sys.stdout.flush()
            if saved is not None:
                os.dup2(saved, 1)
                os.close(saved)


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
            print(terminal(f"{key:>16}: {value}"))  # a finished run's summary comes from its database
