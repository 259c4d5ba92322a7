"""CLI subcommands. Each module has ``add_parser(subparsers)`` and ``handle(args) -> int``."""

from scenarios.commands import resume, run

COMMANDS = (run, resume)
