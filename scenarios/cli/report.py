"""``catallax report RUN_ID``: PNG figures and a Markdown summary of one run, read from its database.

    catallax report RUN_ID [RUN_ID ...] [--db URL] [--out DIR] [--json]

Writes ``DIR/report-RUN_ID/summary.md`` and its figures (see scenarios/report) for the first run; the runs after
it are drawn beside it in the learning-curve figure (runs with ``run.eval_every``: one line per run).
A missing database or run is bad input: one error line, exit 2, nothing written.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from sqlalchemy.engine import make_url

from market.store import make_engine, run_exists
from scenarios.cli.run import database_url, store_errors
from scenarios.run.config import ConfigError
from skills.files import UnsafePath, run_id_part


def add_parser(subparsers):
    p = subparsers.add_parser("report", help="plot a run: wealth, flows, lineage, skill evolution (PNG + Markdown)")
    p.add_argument("run_id")
    p.add_argument("compare", nargs="*", metavar="RUN_ID",
                   help="more runs of the database whose learning curves the report draws beside the first's")
    p.add_argument("--db", help="SQLAlchemy URL of the results database (default: sqlite file in --out)")
    p.add_argument("--out", type=Path, default=Path("runs"),
                   help="output folder; the report goes to OUT/report-RUN_ID/ (default: runs/)")
    p.add_argument("--json", action="store_true", help="print the written paths as one JSON line last")
    return p


def handle(args) -> int:
    try:
        folder = f"report-{run_id_part(args.run_id)}"  # checked before it names a folder
    except UnsafePath as err:
        raise ConfigError(str(err)) from None
    if args.out.exists() and not args.out.is_dir():
        raise ConfigError(f"--out {args.out}: not a folder")
    db_url = database_url(args.db, args.out, must_exist=True)
    url = make_url(db_url)
    with store_errors():
        engine = make_engine(db_url, readonly=True)  # a report only reads: the database is left as it was
    target = args.out / folder
    created = next((p for p in (args.out, target) if not p.exists()), None)  # what a failed write removes again
    try:
        for run_id in (args.run_id, *args.compare):
            if not run_exists(engine, run_id):
                raise ConfigError(f"run {run_id}: not found in {url.render_as_string(hide_password=True)}")
        from scenarios.report.summary import write_report  # matplotlib loads only for this command

        with store_errors():  # a value the database should not hold: one line naming its table and column
            written = write_report(engine, args.run_id, target, args.compare)
    except (UnsafePath, NotADirectoryError, FileExistsError) as err:  # a symlink or file where the report goes
        raise ConfigError(str(err)) from None
    except OSError as err:  # a full disk (ENOSPC), a read-only one, a quota: no half-written folder is left
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        raise ConfigError(f"{err.filename or target}: cannot write the report ({err.strerror or err})") from None
    finally:
        engine.dispose()
    if args.json:
        print(json.dumps({"run_id": args.run_id, "summary": str(written["summary"]),
                          "figures": {k: str(v) for k, v in written["figures"].items()}}))
    else:
        print(f"report of run {args.run_id}: {written['summary']} ({len(written['figures'])} figures)")
    return 0
