"""Database write throughput: transfers per second persisted through ``RunStore.write_rounds``, a round a call.

Usage::

    python benchmarks/db.py                              # SQLite (a temporary file), rounds of 100, 1k, 10k transfers
    python benchmarks/db.py --db postgresql+psycopg://...  # the same against SQLite *and* that database, side by side
    python benchmarks/db.py --json                       # ... and one final JSON line
    python benchmarks/db.py --quick                      # smoke run: rounds of 100 and 1k, a few each

What is measured. :meth:`market.store.RunStore.write_rounds` is how every run persists (a run writes
the rounds since its last checkpoint with the next one; here each call is one round, the most
transactions a run could make): one transaction holding the round's transfer rows (and episode rows). Each timed round
is a :class:`market.model.RoundLog` of T transfers (``market.ledger.TRANSFER_DTYPE``: random
src, dst and amount, the round number as the episode) and one episode row, written without a
checkpoint; throughput is transfers written / wall seconds of those calls (commit
included), median over repeats. Beside it, as a reference for what the database and its driver
can take, the same rows go into the same table (``transfer_log``, ids of their own run) as plain
tuples through one DB-API ``executemany`` per round (``exec_driver_sql``, nothing else in the
transaction); *share* is the store's rate (``write_round`` in the tables) over that one, the median of per-repeat ratios.
SQLite is a fresh file in a temporary folder, WAL journal, ``synchronous=NORMAL``
(``market.database.make_engine``). With ``--db URL`` the same rounds
also go to that database (any SQLAlchemy URL, e.g. PostgreSQL), interleaved with SQLite
round size by round size so the two share the machine's state; the benchmark's runs are
deleted from it afterwards. The transfer contents do not matter to the database (integers of
the same widths as a real run's), only their number per round does.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from sqlalchemy import delete  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402
from sqlmodel import Session  # noqa: E402

from benchmarks._units import label  # noqa: E402
from market.ledger import TRANSFER_DTYPE  # noqa: E402
from market.model import RoundLog  # noqa: E402
from market.schema import LOG_STRIDE  # noqa: E402
from market.store import (  # noqa: E402
    Agent,
    Checkpoint,
    EpisodeLog,
    Lease,
    Run,
    RunNumber,
    RunStore,
    TransferLog,
    run_first_id,
)


def rounds_of(size: int, count: int, rng: np.random.Generator, first_episode: int) -> list[RoundLog]:
    logs = []
    for r in range(count):
        t = np.zeros(size, dtype=TRANSFER_DTYPE)
        t["src"], t["dst"] = rng.integers(0, 10_000, size), rng.integers(0, 10_000, size)
        t["amount"], t["reason"] = rng.integers(1, 10**9, size), 1
        t["episode"], t["step"] = first_episode + r, rng.integers(0, 10, size)
        logs.append(RoundLog(t, [{"episode": first_episode + r, "success": True, "steps": 10, "reward": 1, "population": 1}]))
    return logs


def throughput(store: RunStore, logs: list[RoundLog]) -> float:
    """Transfers per second over these rounds, each written by one write_rounds call."""
    start = time.perf_counter()
    for log in logs:
        store.write_rounds([log])
    return sum(len(log.transfers) for log in logs) / (time.perf_counter() - start)


def driver_throughput(store: RunStore, logs: list[RoundLog], ids: itertools.count) -> float:
    """The reference: the same rows as tuples, one DB-API executemany per round, one transaction each."""
    ph = "?" if store.engine.dialect.paramstyle == "qmark" else "%s"
    sql = f"INSERT INTO transfer_log (id, src, dst, amount, reason, episode, step) VALUES ({', '.join([ph] * 7)})"
    start = time.perf_counter()
    for log in logs:
        rows = [(next(ids), *row) for row in log.transfers.tolist()]
        with store.engine.begin() as conn:
            conn.exec_driver_sql(sql, rows)
    return sum(len(log.transfers) for log in logs) / (time.perf_counter() - start)


def log_start(store: RunStore) -> int:
    """The first id of this store's run in the logs (the driver reference writes its rows from there)."""
    with Session(store.engine) as s:
        return run_first_id(s, store.run_id)


def cleanup(store: RunStore) -> None:
    with Session(store.engine) as s:
        first = run_first_id(s, store.run_id)
        for log in (TransferLog, EpisodeLog):
            s.execute(delete(log).where(log.id.between(first, first + LOG_STRIDE - 1)))
        for table in (Agent, Checkpoint, Lease, RunNumber):
            s.execute(delete(table).where(table.run_id == store.run_id))
        s.execute(delete(Run).where(Run.id == store.run_id))
        s.commit()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", help="also measure this SQLAlchemy URL (e.g. postgresql+psycopg://user@/db?host=/tmp/pg)")
    ap.add_argument("--quick", action="store_true", help="smoke run: rounds of 100 and 1k transfers, a few each")
    ap.add_argument("--json", action="store_true", help="print one final JSON line")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    # transfers per round -> (rounds per repeat, repeats)
    plan = {100: (5, 1), 1000: (2, 1)} if args.quick else {100: (50, 5), 1000: (10, 5), 10_000: (2, 5)}

    with tempfile.TemporaryDirectory() as tmp:
        urls = {"sqlite": f"sqlite:///{Path(tmp) / 'bench.db'}"}
        if args.db:
            name = make_url(args.db).get_backend_name()
            urls[name if name not in urls else f"{name}_db"] = args.db
        stores = {(name, how): RunStore.create(url, "bench", 0, {"benchmark": "db"})
                  for name, url in urls.items() for how in ("write_round", "driver")}
        ids = {key: itertools.count(log_start(store)) for key, store in stores.items()}  # the driver runs' log ids
        rng, episode, out = np.random.default_rng(0), 0, {}
        print("transfers per second persisted, one transaction per round (median of interleaved repeats):")
        print(f"  {'per round':>9} {'database':>11} {'write_round':>12} {'executemany':>12} {'share':>6}"
              + (f" {'vs sqlite':>9}" if len(urls) > 1 else ""))
        try:
            for size, (count, repeats) in plan.items():
                rates = {key: [] for key in stores}
                for _ in range(repeats):  # every database and method gets the same rounds, one after the other
                    logs = rounds_of(size, count, rng, episode)
                    episode += count
                    for (name, how), store in stores.items():
                        rate = (throughput(store, logs) if how == "write_round"
                                else driver_throughput(store, logs, ids[name, how]))
                        rates[name, how].append(rate)
                for name in urls:
                    ours, ref = rates[name, "write_round"], rates[name, "driver"]
                    share = statistics.median(a / b for a, b in zip(ours, ref))  # paired: adjacent in time
                    out[f"{name}_per_s_{label(size)}"] = round(statistics.median(ours))
                    out[f"{name}_driver_per_s_{label(size)}"] = round(statistics.median(ref))
                    out[f"{name}_share_of_driver_{label(size)}"] = round(share, 2)
                    line = (f"  {size:>9} {name:>11} {statistics.median(ours):>12,.0f} {statistics.median(ref):>12,.0f}"
                            f" {share:>6.2f}")
                    if name != "sqlite":
                        vs = statistics.median(a / b for a, b in zip(ours, rates["sqlite", "write_round"]))
                        out[f"ratio_{name}_vs_sqlite_{label(size)}"] = round(vs, 2)
                        line += f" {vs:>8.2f}x"
                    print(line, flush=True)
        finally:
            for store in stores.values():
                cleanup(store)
                store.engine.dispose()
    print("share: write_round's rate over the driver's executemany of the same rows as tuples (the ORM-free reference)")
    print(f"wall time: {time.perf_counter() - t0:.1f} s")
    if args.json:
        print(json.dumps(out | {"databases": list(urls)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
