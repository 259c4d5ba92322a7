"""CLI subcommands. Each module has ``add_parser(subparsers)`` and ``handle(args) -> int``."""

from scenarios.commands import resume, run
from scenarios.commands import skills

from scenarios.commands import sweep
from scenarios.commands import bench
from scenarios.commands import report
COMMANDS = (run, resume, skills, sweep, bench, report)
