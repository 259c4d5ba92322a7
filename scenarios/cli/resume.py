"""``catallax resume RUN_ID``: continue a killed or interrupted run from its last checkpoint (a finished one:
print its summary).

A run of a plugin scenario (a .py file, a module) resumes while the plugin's files hash to what the run
stored when it started; otherwise, or for a database from elsewhere, ``--scenario PATH`` names the plugin
you trust (scenarios/run/trust.py). Nothing a database names is imported otherwise."""

from __future__ import annotations

import sys
from pathlib import Path

from scenarios.cli.run import database_url, print_summary, store_errors, summary_alone
from scenarios.run.interrupt import Stop
from scenarios.run.runner import resume_experiment


def add_parser(subparsers):
    p = subparsers.add_parser("resume", help="continue a run from its last checkpoint")
    p.add_argument("run_id")
    p.add_argument("--db", help="SQLAlchemy URL of the results database (default: sqlite file in --out)")
    p.add_argument("--out", type=Path, default=Path("runs"), help="output folder (default: runs/)")
    p.add_argument("--scenario", help="the plugin (.py file or module) the run names, if you trust it: a stored "
                   "plugin is otherwise imported only when its files hash to what was stored at the run's start")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON line last")
    return p


def handle(args) -> int:
    db_url = database_url(args.db, args.out, must_exist=True)
    with store_errors(), Stop() as stop, summary_alone():  # also: no such run, a run another process writes
        summary = resume_experiment(args.run_id, db_url, progress=sys.stderr.isatty(), stop=stop,
                                     scenario=args.scenario)  # no \r frames into a pipe
    if stop.interrupted:
        return stop.interrupted.exit_code
    print_summary(summary, args.json)
    return 0
