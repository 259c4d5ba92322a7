"""``catallax sweep SCENARIO --grid key=v1,v2 --seeds N``: every (grid point, seed) as a Ray task.

Prints a table (mean ± spread of each numeric metric per grid point), writes it
as CSV in ``--out``, and with ``--json`` one JSON object last. Exit code 1 when
any run failed (each is reported with its error; the others still run), 2 for
bad input (nothing runs, nothing is written).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from tqdm import tqdm

from market.escape import terminal
from market.store import new_run_id
from scenarios.cli.run import database_url, output_folder, store_errors
from scenarios.run.sweep import format_table, parse_grid, plan, sweep, table, write_csv


def add_parser(subparsers):
    p = subparsers.add_parser("sweep", help="run a scenario over a grid of settings and seeds on Ray")
    p.add_argument("scenario", help="a scenario name under scenarios/ (e.g. relay) or a .toml file")
    p.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                   help="a config key and its values, e.g. --grid market.payment=bucket_brigade,final_only (repeatable)")
    p.add_argument("--seeds", type=int, default=1, help="runs per grid point, seeds run.seed .. run.seed+N-1 (default 1)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key for every run, e.g. --set run.episodes=200 (repeatable)")
    p.add_argument("--address", help="Ray cluster to join (default: start a local Ray sized to this machine)")
    p.add_argument("--db", help="SQLAlchemy URL of the results database (default: sqlite file in --out)")
    p.add_argument("--out", type=Path, default=Path("runs"), help="output folder for the CSV (default: runs/)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON line last")
    return p


def handle(args) -> int:
    grid = parse_grid(args.grid)
    tasks = plan(args.scenario, args.overrides, grid, args.seeds)
    db_url = database_url(args.db, args.out, durable=True)
    if args.db is None:  # the default database lives in --out (the CSV goes there too, once the runs are done)
        output_folder(args.out)
    sweep_id = new_run_id()

    def report(outcome):
        point = " ".join(f"{k}={v}" for k, v in outcome.task.point.items()) or "(no grid)"
        tqdm.write(f"catallax: run {outcome.task.run_id} ({point}, seed {outcome.task.seed}) failed: {outcome.error}",
                   file=sys.stderr)

    with store_errors():
        outcomes = sweep(tasks, sweep_id, db_url, args.address, progress=sys.stderr.isatty(),
                         on_failure=report)
    rows = table(grid, outcomes)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"sweep-{sweep_id}.csv"
    write_csv(rows, path)
    failed = [o for o in outcomes if o.error]
    print(terminal(format_table(rows), keep="\n"))
    print(f"sweep {sweep_id}: {len(outcomes) - len(failed)} run(s) in {db_url}, {len(failed)} failed; table in {path}")
    if args.json:
        print(json.dumps({
            "sweep": sweep_id, "scenario": args.scenario, "db": db_url, "csv": str(path),
            "runs": [{"run_id": o.task.run_id, **o.task.point, "seed": o.task.seed, "ledger_hash": o.summary["ledger_hash"]}
                     for o in outcomes if o.summary],
            "failed": [{"run_id": o.task.run_id, **o.task.point, "seed": o.task.seed, "error": o.error} for o in failed],
            "table": [{k: None if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()} for r in rows],
        }))
    return 1 if failed else 0
