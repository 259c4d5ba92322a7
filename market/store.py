"""Writing runs: a store that writes the rounds since the last checkpoint with the next one, in one
transaction, under a lease that says which process writes the run; and moving a run between databases.

The tables are ``market/schema.py``, opening a database ``market/database.py``, reading a run back
``market/runs.py``; the names callers use with the store (``Run``, ``Agent``, ..., ``make_engine``,
``load_transfers``, ``StoreError``) are imported here from there. Transfers and episodes are written to the
compact logs (``TransferLog``, ``EpisodeLog``) by id range; ``Transfer`` and ``Episode`` are their views, for
reading by run id.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from datetime import UTC, datetime, timedelta

import numpy as np
from sqlalchemy import delete, insert, text, update
from sqlmodel import Session

from market.checkpoint import CheckpointError, decode
from market.database import make_engine, retrying, shown_url  # noqa: F401 (callers import make_engine here)
from market.ledger import TRANSFER_DTYPE
from market.reading import checked_ints, connected, snapshot, stored_json  # noqa: F401 (callers import them here)
from market.runs import (  # noqa: F401 (callers import the readers here)
    EPISODE_COLUMNS,
    TRANSFER_COLUMNS,
    export_run,
    first_id,
    get_run,
    load_episodes,
    load_heldout,
    load_transfers,
    load_usage,
    run_exists,
    run_first_id,
    stored_balances,
)
from market.schema import (  # noqa: F401 (callers import the tables here)
    LOG_STRIDE,
    MODELS,
    Agent,
    Checkpoint,
    Episode,
    EpisodeLog,
    HeldoutEval,
    Lease,
    RoundUsage,
    Run,
    RunNumber,
    StoreError,
    Transfer,
    TransferLog,
)

# ------------------------------------------------------------------ writing runs

HOST = socket.gethostname()
LEASE_STALE_S = 900  # a lease not renewed for this long is stale (every write renews it; see RunStore)


class RunStore:
    """Writes one run: a row in ``run`` at the start, batches of rounds, the summary at the end.

    Each batch is one transaction, the checkpoint after its last round included
    (the runner writes the rounds since its last checkpoint with the next one, as
    a checkpoint and its transaction cost a fast world more than its rounds do),
    so the database never holds half a round and a checkpoint always matches the
    rows beside it. :meth:`attach` reopens a run at its checkpoint for resuming.

    One writer per run: the store holds the run's :class:`Lease` (taken with
    the run row, or by :meth:`attach`) and every write renews it in its own
    transaction, checking its token; a store whose lease was taken over raises
    :class:`StoreError` instead of writing. A lease is live while its process
    is (same host: the pid exists) and renewed within :data:`LEASE_STALE_S`
    (a writer on another host whose round takes longer would be taken for dead).
    """

    before_commit = None
    """A test's injection point: called with the write's number inside its open transaction, every row sent,
    nothing committed (tests/scenarios/faults.py); None in every run."""

    def __init__(self, engine, run_id: str, seq: int = 0):
        self.engine, self.run_id, self._seq = engine, run_id, seq
        self._first = 0  # the run's first id in the logs (set once its number is known)
        self._writes = 0
        self.token = uuid.uuid4().hex

    @classmethod
    def create(cls, url: str, scenario: str, seed: int, config: dict, run_id: str | None = None,
               sweep: str | None = None) -> RunStore:
        store = cls(make_engine(url), run_id or new_run_id())

        def write():
            with Session(store.engine) as s:
                s.add(Run(id=store.run_id, scenario=scenario, seed=seed, config=json.dumps(config), sweep=sweep,
                          started_at=datetime.now(UTC)))
                number = RunNumber(run_id=store.run_id)
                s.add(number)
                s.flush()
                first = first_id(number.num)
                s.add(store._lease())
                s.commit()
                return first

        store._first = retrying(write)
        return store

    @classmethod
    def attach(cls, url: str, run_id: str, take_over: bool = False) -> tuple[RunStore, Run, dict | None]:
        """Reopen a run: take its lease, decode its checkpoint, remove the rows written after it (a round
        that was cut off); all in one transaction. Returns the store, the run and the checkpoint's state
        (None: no checkpoint yet). A finished run is returned as it is, and nothing is written.

        Raises :class:`StoreError` if the database has no such run, another process writes it (its lease
        is live; ``take_over`` takes it anyway: for a caller who knows that process died), or its
        checkpoint is not one this catallax reads; nothing is written then."""
        engine = make_engine(url)
        store = cls(engine, run_id)

        def reopen():
            with Session(engine, expire_on_commit=False) as s:
                run = s.get(Run, run_id, with_for_update=True)  # two resumes at once: one waits for the other
                if run is None:
                    raise StoreError(f"run {run_id}: not found in {shown_url(url)}")
                if run.status == "finished":
                    return run, None, 0, 0
                lease = s.get(Lease, run_id, with_for_update=True)  # waits for a round still being written
                if lease is not None and not take_over and live(lease):
                    raise StoreError(f"run {run_id} is being written by PID {lease.pid} on {lease.host} since "
                                     f"{_utc(lease.since):%Y-%m-%d %H:%M:%S} UTC (last round "
                                     f"{_utc(lease.heartbeat):%H:%M:%S} UTC)")
                ckpt = s.get(Checkpoint, run_id)
                try:
                    state = decode(ckpt.state) if ckpt else None
                except CheckpointError as err:
                    raise StoreError(f"checkpoint of run {run_id}: {err}") from None
                episodes, seq = (ckpt.episodes_done, ckpt.transfers) if ckpt else (0, 0)
                first = run_first_id(s, run_id)
                s.execute(delete(TransferLog).where(TransferLog.id.between(first + seq, first + LOG_STRIDE - 1)))
                s.execute(delete(EpisodeLog).where(EpisodeLog.id.between(first + episodes, first + LOG_STRIDE - 1)))
                s.execute(delete(RoundUsage).where(RoundUsage.run_id == run_id, RoundUsage.episode >= episodes))
                s.execute(delete(HeldoutEval).where(HeldoutEval.run_id == run_id, HeldoutEval.episode > episodes))
                if ckpt is None:
                    s.execute(delete(Agent).where(Agent.run_id == run_id))
                else:
                    s.execute(delete(Agent).where(Agent.run_id == run_id, Agent.born_episode > episodes))
                    s.execute(update(Agent).where(Agent.run_id == run_id, Agent.died_episode >= episodes)
                              .values(died_episode=None))
                run.status = "running"
                s.add(run)
                s.merge(store._lease())
                s.commit()
                return run, state, seq, first

        try:
            run, state, store._seq, store._first = retrying(reopen)
        except BaseException:
            engine.dispose()
            raise
        return store, run, state

    def _lease(self) -> Lease:
        now = datetime.now(UTC)
        return Lease(run_id=self.run_id, token=self.token, host=HOST, pid=os.getpid(), since=now, heartbeat=now)

    def _renew(self, s: Session) -> None:
        """First statement of every write: renew our lease, or stop if another process took it over."""
        lease = Lease.__table__.c  # a Core update: the ORM's bulk-update machinery costs more than the round's rows
        renewed = s.execute(update(Lease.__table__).where(lease.run_id == self.run_id, lease.token == self.token)
                            .values(heartbeat=datetime.now(UTC)))
        if renewed.rowcount != 1:
            raise StoreError(f"run {self.run_id}: another process took it over (this one looked dead to it); "
                             "this process writes no more")

    def _put_checkpoint(self, s: Session, state: bytes, episodes_done: int, transfers: int) -> None:
        """Replace the run's checkpoint: a Core delete and insert (the ORM's merge would SELECT it first)."""
        s.execute(delete(Checkpoint).where(Checkpoint.run_id == self.run_id))
        s.execute(insert(Checkpoint).values(run_id=self.run_id, episodes_done=episodes_done, transfers=transfers,
                                            state=state))

    def write_rounds(self, logs: list, checkpoint: bytes | None = None, episodes_done: int = 0) -> None:
        """Persist :class:`market.model.RoundLog` s, in order, and a checkpoint after the last (none: a
        checkpoint alone, at the rows written so far) in one transaction."""
        t = np.concatenate([log.transfers for log in logs]) if logs else np.empty(0, TRANSFER_DTYPE)
        start, end = self._seq, self._seq + len(t)
        if end > LOG_STRIDE:
            raise StoreError(f"run {self.run_id}: more than {LOG_STRIDE:,} transfers, the most one run can store")
        self._writes += 1
        rows = np.empty(len(t), dtype=_ROW_DTYPE)  # the log rows with their ids: one tolist() makes the tuples
        rows["id"] = np.arange(self._first + start, self._first + end)  # (two thirds of zipping eight column lists)
        for name in TRANSFER_DTYPE.names:
            rows[name] = t[name]
        transfers = rows.tolist()
        episodes = [(self._first + e["episode"], *(e[name] for name in EPISODE_COLUMNS[1:]))
                    for log in logs for e in log.episodes]
        births = [dict(run_id=self.run_id, **b) for log in logs for b in log.births]
        deaths = [dict(run_id=self.run_id, **d) for log in logs for d in log.deaths]  # updated after all births:
        # an agent born and dead within the batch is inserted first
        usage = [dict(run_id=self.run_id, **u) for log in logs for u in log.usage]
        heldout = [dict(run_id=self.run_id, **h) for log in logs for h in log.heldout]

        def write():
            with Session(self.engine) as s:
                self._renew(s)
                if births:
                    s.execute(insert(Agent), births)
                insert_rows(s.connection(), TransferLog, TRANSFER_COLUMNS, transfers)
                insert_rows(s.connection(), EpisodeLog, EPISODE_COLUMNS, episodes)
                if deaths:  # ORM bulk update by primary key: one executemany
                    s.execute(update(Agent), deaths)
                if usage:
                    s.execute(insert(RoundUsage), usage)
                if heldout:
                    s.execute(insert(HeldoutEval), heldout)
                if checkpoint is not None:
                    self._put_checkpoint(s, checkpoint, episodes_done, end)
                if self.before_commit is not None:
                    self.before_commit(self._writes)
                s.commit()

        retrying(write)
        self._seq = end

    def finish(self, summary: dict, final_wealth: dict[int, int], tokens: dict[int, int] | None = None) -> None:
        """Store every account's final balance (dead ones end at zero), the live agents' LLM token
        counts (``tokens``, same keys) and the summary."""

        def write():
            with Session(self.engine) as s:
                self._renew(s)
                s.execute(update(Agent).where(Agent.run_id == self.run_id).values(final_wealth=0))
                if final_wealth:
                    s.execute(update(Agent), [{"run_id": self.run_id, "agent_id": a, "final_wealth": w,
                                               **({"tokens": tokens[a]} if tokens else {})}
                                              for a, w in final_wealth.items()])
                run = s.get(Run, self.run_id)
                run.status, run.finished_at = "finished", datetime.now(UTC)
                run.episodes, run.ledger_hash = summary["episodes"], summary["ledger_hash"]
                run.summary = json.dumps(summary)
                s.add(run)
                s.execute(delete(Lease).where(Lease.run_id == self.run_id))
                if self.engine.dialect.name == "sqlite":
                    s.flush()
                    _give_back_free_pages(s)
                s.commit()

        retrying(write)

    def release(self, status: str, summary: dict | None = None) -> None:
        """Give up the run: mark it ``failed`` (it raised) or ``interrupted`` and drop our lease; its rows up
        to the last checkpoint stay, and it can be resumed. Nothing, if another process took it over."""

        def write():
            with Session(self.engine) as s:
                mine = s.execute(delete(Lease).where(Lease.run_id == self.run_id, Lease.token == self.token))
                if mine.rowcount == 1:
                    values = {"status": status} | ({"summary": json.dumps(summary)} if summary else {})
                    s.execute(update(Run).where(Run.id == self.run_id).values(**values))
                s.commit()

        retrying(write)

    def fail(self, error: str) -> None:
        """Mark the run failed (it raised); see :meth:`release`."""
        self.release("failed", {"error": error})


_ROW_DTYPE = np.dtype([(name, np.int64) for name in TRANSFER_COLUMNS])


def insert_rows(conn, model, columns: tuple[str, ...], rows: list[tuple]) -> None:
    """One DB-API executemany of plain tuples: the fastest batch insert either driver takes (no ORM rows, no dicts)."""
    if rows:
        mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
        conn.exec_driver_sql(f"INSERT INTO {model.__tablename__} ({', '.join(columns)}) "
                             f"VALUES ({', '.join([mark] * len(columns))})", rows)


def _give_back_free_pages(s: Session) -> None:
    """Shrink a SQLite file by its free pages (the checkpoints each round replaced), where it has incremental
    auto-vacuum (files made by this catallax). pysqlite steps the pragma once, which frees one page: so, per page."""
    if s.execute(text("PRAGMA auto_vacuum")).scalar() == 2:
        for _ in range(s.execute(text("PRAGMA freelist_count")).scalar()):
            s.execute(text("PRAGMA incremental_vacuum"))


def live(lease: Lease) -> bool:
    """Whether the lease's process may still be writing: renewed lately, and (on this host) its pid exists."""
    if datetime.now(UTC) - _utc(lease.heartbeat) > timedelta(seconds=LEASE_STALE_S):
        return False
    if lease.host != HOST:
        return True
    try:
        os.kill(lease.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _utc(t: datetime) -> datetime:
    """SQLite hands datetimes back without their zone; they were written in UTC."""
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


# ------------------------------------------------------------------ moving a run between databases

def import_run(engine, rows: dict[str, list[dict]]) -> None:
    """Insert an exported run in one transaction: all of its rows land, or none (a second import fails).
    The run gets this database's next number; its transfers and episodes go to the logs under it."""

    def write():
        with Session(engine) as s:
            for m in (Run, Agent, Checkpoint, RoundUsage, HeldoutEval):
                if rows.get(m.__tablename__):
                    s.execute(insert(m.__table__), rows[m.__tablename__])
            number = RunNumber(run_id=rows["run"][0]["id"])
            s.add(number)
            s.flush()
            first = first_id(number.num)
            insert_rows(s.connection(), TransferLog, TRANSFER_COLUMNS, [
                (first + r["seq"], *(r[c] for c in TRANSFER_COLUMNS[1:])) for r in rows.get("transfer", ())])
            insert_rows(s.connection(), EpisodeLog, EPISODE_COLUMNS, [
                (first + r["episode"], *(r[c] for c in EPISODE_COLUMNS[1:])) for r in rows.get("episode", ())])
            s.commit()

    retrying(write)
