"""Writing runs and reading them back: a store that writes the rounds since the last checkpoint with the next
one, in one transaction.

The tables, the engine and the schema versions are ``market/schema.py``; the
names callers use with the store (``Run``, ``Agent``, ..., ``make_engine``,
``StoreError``) are imported here from there. Transfers and episodes are written
to and read from the compact logs (``TransferLog``, ``EpisodeLog``) by id range;
``Transfer`` and ``Episode`` are their views, for reading by run id.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from datetime import UTC, datetime, timedelta

import numpy as np
from sqlalchemy import delete, func, insert, select, text, update
from sqlmodel import Session

from market.checkpoint import CheckpointError, decode
from market.ledger import TRANSFER_DTYPE
from market.reading import checked_ints, connected, snapshot, stored_json  # noqa: F401 (callers import them here)
from market.schema import (
    LOG_STRIDE,
    MODELS,
    Agent,
    Checkpoint,
    Episode,
    EpisodeLog,
    Lease,
    RoundUsage,
    Run,
    RunNumber,
    StoreError,
    Transfer,
    TransferLog,
    make_engine,
    retrying,
    shown_url,
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

    def write_round(self, log, checkpoint: bytes | None = None, episodes_done: int = 0) -> None:
        """Persist one :class:`market.model.RoundLog` (and a checkpoint) in one transaction."""
        self.write_rounds([log], checkpoint, episodes_done)

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


TRANSFER_COLUMNS = ("id", *TRANSFER_DTYPE.names)  # a transfer_log row: the id, then the ledger's columns
_ROW_DTYPE = np.dtype([(name, np.int64) for name in TRANSFER_COLUMNS])
EPISODE_COLUMNS = ("id", "success", "steps", "reward", "population")  # a RoundLog episode's, "episode" as the id


def insert_rows(conn, model, columns: tuple[str, ...], rows: list[tuple]) -> None:
    """One DB-API executemany of plain tuples: the fastest batch insert either driver takes (no ORM rows, no dicts)."""
    if rows:
        mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
        conn.exec_driver_sql(f"INSERT INTO {model.__tablename__} ({', '.join(columns)}) "
                             f"VALUES ({', '.join([mark] * len(columns))})", rows)


def first_id(num: int) -> int:
    """The first log id of the run numbered ``num`` (see market.schema)."""
    return (num - 1) * LOG_STRIDE


def run_first_id(s, run_id: str) -> int:
    num = s.execute(select(RunNumber.num).where(RunNumber.run_id == run_id)).scalar_one_or_none()
    if type(num) is not int or not 1 <= num <= MAX_RUN_NUMBER:  # a foreign database's: its ids must fit int64
        raise StoreError(f"run_number.num: {num!r:.60} is not a run number (1 to {MAX_RUN_NUMBER})")
    return first_id(num)


MAX_RUN_NUMBER = (2**63 - 1) // LOG_STRIDE  # the last run whose log ids fit int64


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


# ------------------------------------------------------------------ reading runs, moving them between databases


def run_exists(engine, run_id: str) -> bool:
    with connected(engine) as conn:  # the id alone: no other column of a foreign row is converted
        return conn.execute(select(Run.id).where(Run.id == run_id)).first() is not None


def get_run(engine, run_id: str) -> Run | None:
    """The run's row, detached from any session (None: no such run): what a resume reads and checks before
    it takes the run's lease."""
    try:
        with Session(engine) as s:
            run = s.get(Run, run_id)
            if run is not None:
                s.expunge(run)
            return run
    except (ValueError, TypeError, OverflowError) as err:  # a date or number SQLAlchemy cannot convert
        raise StoreError(f"run {run_id}: its row: {' '.join(str(err).split())[:120]}") from None


def load_episodes(engine, run_id: str) -> list[dict]:
    """The run's episode rows, in order, as the dicts the model produced."""
    with Session(engine) as s:
        first = run_first_id(s, run_id)
        rows = s.execute(select(*(getattr(EpisodeLog, c) for c in EPISODE_COLUMNS))
                         .where(EpisodeLog.id.between(first, first + LOG_STRIDE - 1)).order_by(EpisodeLog.id)).all()
    checked_ints(rows, EPISODE_COLUMNS, "episode_log")
    return [{"episode": id_ - first, **dict(zip(EPISODE_COLUMNS[1:], rest))} for id_, *rest in rows]


def load_usage(engine, run_id: str) -> dict[str, dict]:
    """The LLM usage of the run's stored rounds, summed per engine: backend -> {prompt_tokens, completion_tokens,
    seconds} (none for a run whose rounds called no model)."""
    c = RoundUsage.__table__.c
    with engine.connect() as conn:
        sums = (func.sum(c.prompt_tokens), func.sum(c.completion_tokens), func.sum(c.seconds))
        rows = conn.execute(select(c.backend, *sums).where(c.run_id == run_id).group_by(c.backend)).all()
    return {backend: {"prompt_tokens": int(p), "completion_tokens": int(t), "seconds": float(sec)}
            for backend, p, t, sec in rows}


def _query_log(engine, run_id: str, query: str) -> list[tuple]:
    """``query`` over the run's transfer log rows (``{table}`` names the log, each ``{rows}`` is a WHERE on the
    run's id range), through a DB-API cursor: its plain tuples cost a fraction of SQLAlchemy's rows."""
    with connected(engine) as conn:
        first = run_first_id(conn, run_id)
        mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
        sql = query.format(table=TransferLog.__tablename__, rows=f"WHERE id BETWEEN {mark} AND {mark}")
        cursor = conn.connection.cursor()
        try:
            cursor.execute(sql, (first, first + LOG_STRIDE - 1) * query.count("{rows}"))
            return cursor.fetchall()
        except conn.dialect.dbapi.DataError as err:  # PostgreSQL: a sum past bigint
            raise StoreError(f"{TransferLog.__tablename__}: {' '.join(str(err).split())[:120]}") from None
        except conn.dialect.dbapi.OperationalError as err:  # SQLite: "integer overflow" summing stored amounts
            if "overflow" not in str(err):
                raise
            raise StoreError(f"{TransferLog.__tablename__}.amount: the stored amounts overflow int64 when "
                             "summed") from None
        finally:
            cursor.close()


def load_transfers(engine, run_id: str) -> np.ndarray:
    """The run's transfer log, in order, as a structured array (see market.ledger): what ``resume`` restores
    and reports plot."""
    columns = ", ".join(TRANSFER_DTYPE.names)
    rows = _query_log(engine, run_id, f"SELECT {columns} FROM {{table}} {{rows}} ORDER BY id")
    return checked_ints(rows, TRANSFER_DTYPE.names, TransferLog.__tablename__, TRANSFER_DTYPE)


def stored_balances(engine, run_id: str) -> dict[int, int]:
    """Balances by account id, netted by the database over the run's stored transfer log: what
    ``market.ledger.replay(load_transfers(...))`` gives, without shipping the log to Python (a default blocks
    run's 2.6M rows: 1.5 s against 3.4 s). Integer sums in both engines (PostgreSQL's bigint sum is numeric)."""
    moves = "SELECT dst AS account, amount AS delta FROM {table} {rows} UNION ALL SELECT src, -amount FROM {table} {rows}"
    return {int(account): int(total) for account, total in
            _query_log(engine, run_id, f"SELECT account, SUM(delta) FROM ({moves}) AS moves GROUP BY account")}


def export_run(engine, run_id: str) -> dict[str, list[dict]]:
    """Every row of one run, table by table: what a sweep worker ships to the driver that owns SQLite."""
    with engine.connect() as conn:
        return {m.__tablename__: [dict(r) for r in conn.execute(
            select(m.__table__).where((m.id if m is Run else m.run_id) == run_id)
            .order_by(*m.__table__.primary_key.columns)).mappings()] for m in MODELS}


def import_run(engine, rows: dict[str, list[dict]]) -> None:
    """Insert an exported run in one transaction: all of its rows land, or none (a second import fails).
    The run gets this database's next number; its transfers and episodes go to the logs under it."""

    def write():
        with Session(engine) as s:
            for m in (Run, Agent, Checkpoint, RoundUsage):
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
