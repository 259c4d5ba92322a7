"""The ``catallax`` command line: one subcommand per module in ``scenarios/cli/``.

    catallax run SCENARIO [--set key=value ...] [--seed N] [--db URL] [--out DIR] [--json]

Every subcommand reports a bad scenario, key, value or URL as one error line
naming it and exits with code 2 before anything is written (it raises
:class:`scenarios.run.config.ConfigError`; this module prints it).
"""

from __future__ import annotations

import argparse
import gc
import sqlite3
import sys
import warnings
from pathlib import Path

# The imports below make ~125k objects (mesa's pandas and scipy, sqlalchemy), none of them garbage. The collector,
# left on, walks them again and again while they load (~0.2 s of the command's start) and at every full collection
# after, the interpreter's exit included (~0.5 s of a 3 s relay run): so it is off while they load, and they are
# then frozen out of its sight. What loads later (torch, for LLM runs) is collected as usual.
gc.disable()
import mesa  # noqa: E402, F401  first, from a shallow stack: its import walks the caller's frames (~80 ms from deep)
from agents.backends.base import Unreachable  # noqa: E402
from market.database import shown_url  # noqa: E402
from market.escape import terminal  # noqa: E402
from scenarios.cli import bench, config, dashboard, probe, report, resume, run, scenarios, skills, sweep  # noqa: E402
from market.schema import StoreError  # noqa: E402
from scenarios.registry import ScenarioError  # noqa: E402
from scenarios.run.config import ConfigError, DeprecatedKey  # noqa: E402
from scenarios.run.runner import default_db  # noqa: E402
from sqlalchemy.exc import DatabaseError  # noqa: E402

gc.freeze()
gc.enable()

COMMANDS = (run, resume, config, scenarios, skills, sweep, bench, report, dashboard, probe)
"""Each: add_parser(subparsers), handle(args) -> int."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="catallax", description="Economies of agents.")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(subparsers).set_defaults(handler=command.handle)
    return parser


def _one_line(message, category, filename, lineno, file=None, line=None, _shown=warnings.showwarning):
    """A renamed key's warning as one line naming the old key and the new (other warnings as Python shows them)."""
    if issubclass(category, DeprecatedKey):
        print(f"catallax: warning: {terminal(str(message))}", file=file or sys.stderr)
    else:
        _shown(message, category, filename, lineno, file, line)


def database_url_of(args) -> str:
    """The database a command was pointed at: its ``--db``, else the default file in its ``--out``."""
    return getattr(args, "db", None) or default_db(getattr(args, "out", None) or Path("runs"))


def main(argv: list[str] | None = None) -> int:
    warnings.showwarning = _one_line
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except MemoryError as err:  # a config this machine cannot allocate (a population of 10^14 agents)
        parser.exit(2, f"catallax: error: out of memory ({' '.join(str(err).split())[:160] or 'MemoryError'}); "
                       "lower the sizes in the config\n")
    except (sqlite3.DatabaseError, DatabaseError) as err:  # a damaged file (random bytes in its pages), a full or
        # read-only disk under a write: the database named, one line, wherever in the command it surfaced
        reason = getattr(err, "orig", None) or err
        parser.exit(2, f"catallax: error: {terminal(shown_url(database_url_of(args)))}: the database cannot be used "
                       f"({type(reason).__name__}: {terminal(' '.join(str(reason).split())[:160])})\n")
    except (ConfigError, ScenarioError, StoreError, Unreachable) as err:  # StoreError: a database failing mid-command
        parser.exit(2, f"catallax: error: {terminal(str(err))}\n")  # a name from a file or database: no
        # control character in it reaches the terminal or splits the one line


if __name__ == "__main__":
    sys.exit(main())
