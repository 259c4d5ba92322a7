"""Sweeps: every (grid point, seed) of a scenario is one Ray task; every run lands in one database.

Ray because a sweep is many independent runs: ``ray.init()`` fills the cores
of one machine, and the same code joins a cluster (``--address``).

The pool (:func:`completed`) is not tied to runs: it maps any function, picklable by name, over a list of jobs on
Ray, in spawned processes or in this process, so the comparison scripts (experiments/harness.py) run their grids
through it as well, and write their spreads with the sweep table's ``±`` formatter (:func:`pm`, :func:`mean_sd`).

Where the rows are written. SQLite is one file with one writer at a time, on
one machine, while Ray workers may sit on other machines: each worker runs
into a private SQLite file in its own temp folder and ships the finished run's
rows back (:func:`market.store.export_run`); the driver inserts each run in one
transaction (:func:`market.store.import_run`). A server database (PostgreSQL)
takes the workers' writes directly. Either way a run lands whole and once: the
driver names every run before it starts, and a task that Ray retries after
its worker died resumes that run on the server, or starts it over in a fresh
private file.

Who can reach the workers. Ray's processes listen for each other over TCP, and whoever reaches those ports
can submit tasks that run as the sweep's user. A local sweep therefore starts Ray on the loopback address
only (its node address 127.0.0.1, which Ray's servers then bind to), with no dashboard and with token
authentication under a token made for this sweep and kept in the environment of its processes only. Joining
a cluster the user names (``--address``) requires token authentication there too (:func:`_joined`).

A grid's values are deduplicated once parsed (``1,+1`` is one point), and a
sweep holds at most :data:`MAX_RUNS` runs (points x seeds), refused before any
is planned.
"""

from __future__ import annotations

import csv
import itertools
import math
import multiprocessing
import os
import secrets
import shutil
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sqlalchemy.engine import make_url
from tqdm import tqdm

from market.store import export_run, import_run, make_engine, new_run_id, run_exists
from scenarios.run.config import ConfigError, from_dict, load, parse_override
from scenarios.run.lifetime import die_with_parent
from scenarios.run.runner import resume_experiment, run_experiment


MAX_RUNS = 10_000  # runs in one sweep (grid points x seeds), checked before any is planned
LOOPBACK = "127.0.0.1"
TOKEN_SOURCES = ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")  # where Ray looks for its token, besides ~/.ray/auth_token
RAY_SETTINGS = ("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "RAY_AUTH_MODE", *TOKEN_SOURCES)  # set for a sweep, then put back


@dataclass
class Task:
    """One run of the sweep: its grid point (the raw ``key=value`` strings), seed, validated config and id."""

    point: dict[str, str]
    seed: int
    config: dict
    run_id: str = field(default_factory=new_run_id)


@dataclass
class Outcome:
    task: Task
    summary: dict | None = None
    error: str | None = None


def parse_grid(items: list[str]) -> dict[str, list[str]]:
    """``["market.rent=0.01,0.05", ...]`` -> ``{"market.rent": ["0.01", "0.05"], ...}`` (values stay TOML text).

    Values equal once parsed are one value (``1,1,+1`` is ``1``, the first spelling kept): each grid
    point runs once and its table row counts its own runs."""
    grid: dict[str, list[str]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        values = [v.strip() for v in raw.split(",")]
        if not sep or not key.strip() or not all(values):
            raise ConfigError(f"--grid {item}: expected KEY=V1,V2,..., e.g. market.rent=0.01,0.05")
        key = key.strip()
        if key in grid:
            raise ConfigError(f"--grid {item}: {key} is already on the grid")
        if key == "run.seed":
            raise ConfigError(f"--grid {item}: seeds come from --seeds N")
        grid[key] = _distinct(key, values)
    return grid


def _distinct(key: str, values: list[str]) -> list[str]:
    """``values`` without those equal, as parsed TOML, to an earlier one (true is not 1; 1 is 1.0)."""
    kept, seen = [], []
    for raw in values:
        value = parse_override(f"{key}={raw}")[1]
        if not any(value == s and isinstance(value, bool) == isinstance(s, bool) for s in seen):
            kept.append(raw)
            seen.append(value)
    return kept


def plan(scenario: str, overrides: list[str], grid: dict[str, list[str]], seeds: int) -> list[Task]:
    """Every (grid point, seed), each config validated now: a bad value stops the sweep before any run.

    Seeds are ``run.seed`` (0 unless overridden) + 0 .. seeds-1.
    """
    if seeds < 1:
        raise ConfigError(f"--seeds {seeds}: need at least 1")
    runs = math.prod(len(v) for v in grid.values()) * seeds
    if runs > MAX_RUNS:  # planning costs ~0.6 ms and ~7 KB a run before Ray starts: refused before any
        raise ConfigError(f"--grid/--seeds: {runs:,} runs, at most {MAX_RUNS:,} in one sweep (split it)")
    base = load(scenario, overrides).run.seed
    tasks = []
    for values in itertools.product(*grid.values()):
        point = dict(zip(grid, values))
        for seed in range(base, base + seeds):
            sets = [*overrides, *(f"{k}={v}" for k, v in point.items())]
            try:
                exp = load(scenario, sets, seed=seed)
            except ConfigError as err:
                raise ConfigError(f"--grid {_label(point)}: {err}") from None
            tasks.append(Task(point, seed, exp.to_dict()))
    return tasks


def run_task(task: Task, sweep: str, db_url: str | None) -> tuple[dict, dict | None]:
    """One run, in a Ray worker. ``db_url`` None: into a private SQLite file, whose rows come back."""
    exp = from_dict(task.config, source=f"sweep {sweep}")
    if db_url is not None:
        engine = make_engine(db_url)
        retried = run_exists(engine, task.run_id)  # Ray retried us after our worker died: continue that run
        engine.dispose()
        if retried:  # the dead worker's lease may be on another node, where no pid can be checked: take it
            return resume_experiment(task.run_id, db_url, progress=False, take_over=True,
                                     scenario=exp.run.scenario), None  # the user named it
        return run_experiment(exp, db_url, progress=False, run_id=task.run_id, sweep=sweep), None
    folder = tempfile.mkdtemp(prefix="catallax-run-")
    try:
        url = f"sqlite:///{Path(folder) / 'run.db'}"
        summary = run_experiment(exp, url, progress=False, run_id=task.run_id, sweep=sweep)
        engine = make_engine(url)
        rows = export_run(engine, task.run_id)
        engine.dispose()
        return summary, rows
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def sweep(tasks: list[Task], sweep_id: str, db_url: str, address: str | None = None,
          progress: bool = True, on_failure=None) -> list[Outcome]:
    """Run every task on Ray; a failed run is reported (``on_failure``) and the others go on."""
    engine = make_engine(db_url)  # a bad database fails here, before Ray starts
    ship = make_url(db_url).get_backend_name() == "sqlite"
    try:
        jobs = [(t, sweep_id, None if ship else db_url) for t in tasks]
        outcomes = []
        with tqdm(total=len(tasks), desc=f"sweep {sweep_id}", unit="run", disable=not progress, file=sys.stderr) as bar:
            for i, result, error in completed(run_task, jobs, ray=True, address=address):
                try:
                    if error is not None:
                        raise error
                    summary, rows = result
                    if rows is not None:
                        import_run(engine, rows)
                    outcomes.append(Outcome(tasks[i], summary=summary))
                except Exception as err:  # noqa: BLE001 (the run raised, its worker died, the import failed)
                    said = str(err).strip().splitlines()[0]
                    outcomes.append(Outcome(tasks[i], error=f"{type(err).__name__}: {said}"))
                    if on_failure:
                        on_failure(outcomes[-1])
                bar.update()
        return outcomes
    finally:
        engine.dispose()


def completed(fn, jobs: list[tuple], workers: int = 1, ray: bool = False, address: str | None = None):
    """``fn(*job)`` for every job, yielded as ``(index, result, error)`` in the order they finish: on Ray (``ray``,
    or the cluster at ``address``: one core a job), in ``workers`` spawned processes, or one by one in this process.

    The one pool of the project: sweeps run their tasks through it, and so do the comparison scripts of
    ``experiments/`` (their jobs are plain functions, picklable by name). Spawned, not forked: a worker starts
    without the parent's threads (torch's, a tokenizer's), which a fork would copy mid-flight. A job that raises
    is yielded with its exception (a Ray task's own, not Ray's wrapper), and the others go on; a caller that
    stops early (closes the generator) cancels the jobs not yet started. A worker dies with this process, however
    it dies (scenarios/run/lifetime.py): a killed comparison script leaves no worker holding its model."""
    if ray or address:
        with _ray(address) as r:
            remote = r.remote(num_cpus=1)(fn)
            pending = {remote.remote(*job): i for i, job in enumerate(jobs)}
            try:
                while pending:
                    [ref], _ = r.wait(list(pending), num_returns=1)
                    index = pending.pop(ref)
                    try:
                        result, error = r.get(ref), None
                    except Exception as err:  # noqa: BLE001 (the job raised in its worker, or the worker died)
                        result, error = None, getattr(err, "cause", None) or err
                    yield index, result, error
            finally:  # the caller stopped early: the jobs not done are cancelled
                for ref in pending:
                    r.cancel(ref)
    elif workers > 1:
        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=die_with_parent, initargs=(os.getpid(),))
        try:
            futures = {pool.submit(fn, *job): i for i, job in enumerate(jobs)}
            for future in as_completed(futures):
                error = future.exception()
                yield futures[future], None if error else future.result(), error
        finally:  # the caller stopped early: the jobs not started are cancelled, the running ones finish
            pool.shutdown(wait=True, cancel_futures=True)
    else:
        for index, job in enumerate(jobs):
            try:
                result = fn(*job)
            except Exception as err:  # noqa: BLE001 (reported as a worker's would be)
                yield index, None, err
                continue
            yield index, result, None


@contextmanager
def _ray(address: str | None):
    """Ray for one sweep: a Ray this process already runs, the cluster at ``address``, or a local one on
    the loopback address with a token of its own; a Ray started here is shut down after, and the
    environment put back as it was."""
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        yield ray
        return
    saved = {k: os.environ.get(k) for k in RAY_SETTINGS}
    imported = ray is not None  # by a library before us (vLLM imports Ray): it read its settings then
    temp_dir = None
    try:
        if address:
            _joined(address)
            import ray  # imported after the environment is set: Ray reads its settings when first imported

            if imported:
                read_auth_again()
            ray.init(address=address, log_to_driver=False)
        else:
            os.environ.update({
                "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # Ray's node address becomes 127.0.0.1 ...
                "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)})  # ... and its token this one
            import ray

            temp_dir = tempfile.mkdtemp(prefix="catallax-ray-")
            ray.init(num_cpus=os.cpu_count(), include_dashboard=False, _temp_dir=temp_dir, log_to_driver=False)
            node = ray.util.get_node_ip_address()
            if node != LOOPBACK:  # Ray was imported before the environment above was set (a library caller)
                raise ConfigError(f"sweep: the local Ray started on {node}, not {LOOPBACK}, and would listen "
                                  "beyond this machine; start Ray yourself and pass --address")
        try:
            yield ray
        finally:
            ray.shutdown()
    finally:
        for key, value in saved.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)
        if temp_dir:
            shutil.rmtree(temp_dir, ignore_errors=True)


def read_auth_again() -> None:
    """Make an imported Ray read its auth mode and token from the environment again: it reads and caches them when
    first imported, so a process that imported it before they were set (vLLM imports Ray) would join a cluster
    without the token. (A local Ray started after such an import is refused: its node address was read then too.)"""
    from ray._raylet import AuthenticationTokenLoader, Config  # what Ray's own tests reset between auth modes

    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def _joined(address: str) -> None:
    """Check (and set) token authentication for joining the Ray cluster at ``address``: a cluster the user
    names is reached over the network, where only the token stops anyone else's tasks and data."""
    mode = os.environ.get("RAY_AUTH_MODE", "token")
    if mode.lower() != "token":
        raise ConfigError(f"--address {address}: RAY_AUTH_MODE={mode}; catallax joins a Ray cluster only with "
                          "token authentication (RAY_AUTH_MODE=token and the cluster's token, see the sweeps how-to)")
    if not any(os.environ.get(k) for k in TOKEN_SOURCES) and not (Path.home() / ".ray" / "auth_token").is_file():
        raise ConfigError(f"--address {address}: no Ray authentication token (set RAY_AUTH_TOKEN or "
                          "RAY_AUTH_TOKEN_PATH to the cluster's token, or put it in ~/.ray/auth_token)")
    os.environ["RAY_AUTH_MODE"] = "token"


def table(grid: dict[str, list[str]], outcomes: list[Outcome]) -> list[dict]:
    """Per grid point: runs, failures, and the mean and spread (sample std) of every numeric metric."""
    rows = []
    for values in itertools.product(*grid.values()):
        point = dict(zip(grid, values))
        mine = [o for o in outcomes if o.task.point == point]
        done = [o.summary for o in mine if o.summary is not None]
        row = {**point, "runs": len(done), "failed": len(mine) - len(done)}
        for key in _metrics(done):
            xs = np.array([float(s[key]) for s in done if key in s])
            row[f"{key}_mean"] = float(xs.mean()) if xs.size else math.nan
            row[f"{key}_std"] = float(xs.std(ddof=1)) if xs.size > 1 else math.nan
        rows.append(row)
    return rows


def _metrics(summaries: list[dict]) -> list[str]:
    """Numeric scalar keys of the summaries, in order (booleans count: their mean is a share)."""
    keys = {}
    for s in summaries:
        for key, value in s.items():
            if key != "seed" and isinstance(value, (int, float)):
                keys[key] = None
    return list(keys)


def write_csv(rows: list[dict], path: Path) -> None:
    columns = list(dict.fromkeys(k for r in rows for k in r))
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, columns)
        writer.writeheader()
        writer.writerows({k: ("" if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()} for r in rows)


def format_table(rows: list[dict]) -> str:
    """The summary as aligned text columns (``mean ± std`` per metric)."""
    if not rows:
        return ""
    heads = [k for k in rows[0] if not k.endswith(("_mean", "_std"))]
    metrics = [k[:-5] for k in rows[0] if k.endswith("_mean")]
    cells = [heads + metrics]
    for r in rows:
        cells.append([str(r[k]) for k in heads] + [pm(r.get(f"{m}_mean"), r.get(f"{m}_std")) for m in metrics])
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells)


def pm(mean, spread=None, digits: int | None = None, sign: bool = False, sep: str = " ± ") -> str:
    """``mean ± spread`` (a standard deviation, or a 95% interval's half-width): both to ``digits`` decimals, the
    mean with its sign where ``sign``; ``digits`` None: 4 and 2 significant digits (the sweep's table). No mean:
    ``-``; no spread (None or NaN): the mean alone. The one ``±`` formatter of the sweeps and experiments' tables."""
    if mean is None or math.isnan(mean):
        return "-"
    head, tail = (f"{'+' if sign else ''}.{digits}f", f".{digits}f") if digits is not None else (".4g", ".2g")
    return f"{mean:{head}}" + ("" if spread is None or math.isnan(spread) else f"{sep}{spread:{tail}}")


def mean_sd(values, digits: int = 2, ddof: int = 1, sign: bool = False, sep: str = " ± ", lone: bool = False) -> str:
    """The mean ± standard deviation (``ddof``) of ``values`` (None left out; none: ``-``), as :func:`pm` writes it.
    A spread of one value is 0, or with ``lone`` the value stands alone (no spread to claim)."""
    xs = np.asarray([v for v in values if v is not None], dtype=float)
    if not xs.size:
        return "-"
    if xs.size == 1 and lone:
        return pm(xs[0], None, digits, sign)
    return pm(xs.mean(), xs.std(ddof=ddof) if xs.size > ddof else 0.0, digits, sign, sep)


def _label(point: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in point.items())

