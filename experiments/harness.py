"""One harness for the comparison scripts: the flags they share, one runner for their grids, one table writer.

Every script in ``experiments/`` measures a grid of (arm, seed, world...) jobs and writes tables. What they
have in common lives here, so that a reader learns it once:

* **flags** (:func:`add_flags`, :func:`parse`): ``--seeds N`` and ``--first-seed F`` (seeds F .. F+N-1, the same
  for every arm: paired), ``--quick`` (the script's toy size and one seed: a smoke run, not a measurement),
  ``--workers N`` (jobs at a time, each in its own spawned process), ``--ray`` / ``--address ADDR`` (the jobs
  as Ray tasks, on a local Ray that listens on 127.0.0.1 only, or on the cluster at ADDR with token
  authentication), ``--set KEY=VALUE`` (a config override for every run), ``--out PATH`` and ``--rows PATH``
  (the results rows the docs' tables show, experiments/rows.py);
* **one runner** (:func:`run`): each job is a tuple of arguments of a plain function, run by the project's
  one pool (:func:`scenarios.run.sweep.completed`, which ``catallax sweep`` uses too); the results come back in
  the jobs' order whatever order they finish in, so a table is the same with 1 worker or 8;
* **one table writer** (:func:`markdown`) and one ``mean ± sd`` formatter (:func:`mean_sd`, :func:`pm`, homed
  beside the sweep's table).

A seed's numbers do not depend on the worker that ran it: every run is seeded by its own seed alone.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from contextlib import closing
from pathlib import Path

import numpy as np

from scenarios.registry import ScenarioError
from scenarios.run.config import ConfigError
from scenarios.run.sweep import completed, mean_sd, pm

__all__ = ["add_flags", "parse", "seeds", "run", "logged", "read_log", "markdown", "mean_sd", "pm"]

QUICK_SEEDS = 1


def add_flags(parser: argparse.ArgumentParser, *, seeds: int | None = 5, workers: int = 1, quick: str | None = None,
              out: Path | None = None, out_help: str | None = None, rows: Path | None = None,
              rows_help: str = "write the tables as JSON Lines rows with their provenance (docs/results pages)",
              rows_required: bool = False, sets: bool = True, grid: bool = True) -> argparse.ArgumentParser:
    """The shared flags on ``parser``. ``seeds``: the default count (None: the script's preset decides);
    ``quick``: what the toy size is (None: the script has no toy size beyond one seed); ``out_help`` None: no
    ``--out``; ``sets`` False: no ``--set``; ``grid`` False: no seeds, workers or Ray (a script that tabulates rows
    other runs kept, or makes one seedless measurement)."""
    if grid:
        parser.set_defaults(seeds_default=seeds)
        parser.add_argument("--seeds", type=int, default=None, metavar="N",
                            help=f"seeds per arm (default: {seeds if seeds is not None else 'the preset'}; --quick: "
                                 f"{QUICK_SEEDS}), the same for every arm")
        parser.add_argument("--first-seed", type=int, default=0, metavar="F",
                            help="seeds F .. F+N-1 (a second set checks what the first chose)")
        parser.add_argument("--quick", action="store_true",
                            help=f"toy size and {QUICK_SEEDS} seed: checks the script runs, measures nothing"
                                 + (f" ({quick})" if quick else ""))
        parser.add_argument("--workers", type=int, default=workers, metavar="N",
                            help=f"jobs at a time, each in a spawned process (default {workers}; with --ray: "
                                 "one a core Ray has)")
        parser.add_argument("--ray", action="store_true",
                            help="run the jobs as Ray tasks on a local Ray (127.0.0.1 only, a token of its own)")
        parser.add_argument("--address", metavar="ADDR",
                            help="run the jobs on the Ray cluster at ADDR (token authentication, as catallax sweep)")
    if sets:
        parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                            help="a config override for every run (as catallax run --set)")
    if out_help is not None:
        parser.add_argument("--out", type=Path, default=out, help=out_help)
    parser.add_argument("--rows", type=Path, default=rows, required=rows_required, help=rows_help)
    return parser


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """``parser.parse_args(argv)`` with ``--seeds`` resolved (given; else one with ``--quick``; else the default)
    and the counts checked (a bad one: one line, exit 2)."""
    args = parser.parse_args(argv)
    if hasattr(args, "seeds_default"):
        if args.seeds is None:
            args.seeds = QUICK_SEEDS if args.quick else args.seeds_default
        if args.seeds is not None and args.seeds < 1:
            parser.error(f"--seeds {args.seeds}: need at least 1")
        if args.workers < 1:
            parser.error(f"--workers {args.workers}: need at least 1")
    return args


def seeds(args: argparse.Namespace) -> range:
    """The seeds the flags name: ``--first-seed`` .. ``--first-seed`` + ``--seeds`` - 1."""
    return range(args.first_seed, args.first_seed + args.seeds)


def run(fn, jobs: list[tuple], args: argparse.Namespace | None = None, on_result=None) -> list:
    """``[fn(*job) for job in jobs]``, run as the flags say (``--workers``, ``--ray``, ``--address``; no ``args``:
    one by one here). ``on_result(index, result)`` is called as each job lands (to log it, or keep what a run cut
    short measured); the list is in the jobs' order. A job that raised stops the grid with its own exception (a note
    names the job): the jobs not started are cancelled, the running ones finish first. Run from flags, a refused
    config (a bad ``--set``, a Ray cluster without a token) is one line and exit 2, as ``catallax`` says it."""
    workers = getattr(args, "workers", 1)
    ray, address = getattr(args, "ray", False), getattr(args, "address", None)
    results = [None] * len(jobs)
    try:
        with closing(completed(fn, jobs, workers=workers, ray=ray, address=address)) as done:
            for index, result, error in done:
                if error is not None:
                    error.add_note(f"in job {index} of {len(jobs)}: {getattr(fn, '__name__', fn)}{_shown(jobs[index])}")
                    raise error
                results[index] = result
                if on_result is not None:
                    on_result(index, result)
    except (ConfigError, ScenarioError) as err:  # a bad --set or scenario, a Ray cluster without a token
        if args is None:
            raise
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        raise SystemExit(2) from None
    return results


def logged(path: Path, say):
    """An ``on_result`` that appends each run's row to the log ``path`` (JSON Lines) as it lands, so a grid cut
    short keeps what it measured, and tells ``say(row)`` on stderr."""
    path.parent.mkdir(parents=True, exist_ok=True)

    def landed(index: int, row: dict) -> None:
        with path.open("a") as f:
            f.write(json.dumps(row) + "\n")
        print(say(row), file=sys.stderr)

    return landed


def read_log(path: Path, key: tuple[str, ...] = ("arm", "seed")) -> list[dict]:
    """The runs :func:`logged` kept in ``path``, one per ``key`` (a re-run replaces the earlier row)."""
    runs = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return list({tuple(r[k] for k in key): r for r in runs}.values())


def _shown(job: tuple) -> str:
    text = repr(job)
    return text if len(text) <= 200 else text[:197] + "..."


def markdown(header: list[str], body: list[list]) -> str:
    """A Markdown pipe table: ``header`` and one row of cells (any values, as ``str`` writes them) a line; the
    rows experiments/rows.py reads back into JSON Lines."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join([*lines, *("| " + " | ".join(str(c) for c in row) + " |" for row in body)])


def interval(x) -> tuple[float, float]:
    """Mean and the half-width of its 95% t interval (0 for one value): seeds paired across arms give one
    difference each, and this is the interval on their mean."""
    from scipy import stats

    x = np.asarray(x, dtype=float)
    if x.size < 2:
        return float(x.mean()), 0.0
    return float(x.mean()), float(stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))


def detectable(x, power: float = 0.8) -> float:
    """The smallest true mean difference a paired t test at 5% (two-sided) over ``len(x)`` seeds finds with
    probability ``power``, taking the seeds' spread as the true one: (t_0.975 + t_power) x sd / sqrt(n)."""
    from scipy import stats

    x = np.asarray(x, dtype=float)
    df = x.size - 1
    return float((stats.t.ppf(0.975, df) + stats.t.ppf(power, df)) * x.std(ddof=1) / math.sqrt(x.size))
