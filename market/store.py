"""Persistence of runs: SQLModel tables and a store that writes once per round.

SQLite by default (one file, WAL journal); any SQLAlchemy URL (PostgreSQL)
works the same. Amounts are INTEGER micro-credits. The ``transfer`` table alone
is enough to recompute every final balance in ``agent`` (see tests).

The schema is versioned with alembic (``market/migrations``): opening a
database upgrades an older one, and refuses one whose revision this code does
not know. Several processes may write runs into one database at once: SQLite
transactions take the write lock up front (``BEGIN IMMEDIATE``) and wait for it
(``busy_timeout``), and schema changes happen under a lock on either backend.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from sqlalchemy import (
    BigInteger,
    Column,
    LargeBinary,
    delete,
    event,
    insert,
    inspect,
    text,
    update,
)
from sqlalchemy import select as sa_select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, OperationalError
from sqlmodel import Field, Session, SQLModel, create_engine, select

from market.ledger import TRANSFER_DTYPE

MIGRATIONS = Path(__file__).parent / "migrations"
SCHEMA = "0002"  # the newest revision in MIGRATIONS (a test keeps them equal); alembic loads only to migrate
BASELINE = "0001"  # the schema databases had before it was versioned
SQLITE_BUSY_MS = 60_000  # how long a SQLite writer waits for the lock before "database is locked"


class StoreError(Exception):
    """A database that cannot be used (unreachable, not a database, unknown schema); one line for the user."""


class Run(SQLModel, table=True):
    id: str = Field(primary_key=True)
    scenario: str
    seed: int
    config: str  # JSON of the validated config
    status: str = "running"  # running | finished | failed
    started_at: datetime
    finished_at: datetime | None = None
    episodes: int = 0
    ledger_hash: str | None = None
    summary: str | None = None  # JSON of the final summary (failed: {"error": ...})
    sweep: str | None = Field(default=None, index=True)  # the sweep this run belongs to (catallax sweep)


class Agent(SQLModel, table=True):
    run_id: str = Field(primary_key=True, foreign_key="run.id")
    agent_id: int = Field(primary_key=True)
    parent_id: int | None = None
    born_episode: int
    died_episode: int | None = None
    final_wealth: int | None = Field(default=None, sa_column=Column(BigInteger))
    skill: str | None = None  # the agent's skill text at birth (its rule)


class Transfer(SQLModel, table=True):
    run_id: str = Field(primary_key=True, foreign_key="run.id")
    seq: int = Field(primary_key=True)
    src: int = Field(sa_column=Column(BigInteger, nullable=False))
    dst: int = Field(sa_column=Column(BigInteger, nullable=False))
    amount: int = Field(sa_column=Column(BigInteger, nullable=False))
    reason: int
    episode: int
    step: int


class Episode(SQLModel, table=True):
    run_id: str = Field(primary_key=True, foreign_key="run.id")
    episode: int = Field(primary_key=True)
    success: bool
    steps: int
    reward: int = Field(sa_column=Column(BigInteger, nullable=False))
    population: int


class Checkpoint(SQLModel, table=True):
    """The latest resumable state of a run, written in the same transaction as its round."""

    run_id: str = Field(primary_key=True, foreign_key="run.id")
    episodes_done: int
    transfers: int  # rows of the transfer log this state has seen
    state: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


MODELS = (Run, Agent, Transfer, Episode, Checkpoint)  # parents first: the order rows are inserted in
TABLES = {m.__tablename__ for m in MODELS}


def make_engine(url: str):
    """An engine on an up-to-date schema; SQLite files get WAL, foreign keys and write locks taken up front.

    Raises :class:`StoreError` for a database that cannot be opened or was
    written by a schema revision this code does not know; nothing is written then.
    """
    shown = _shown(url)
    parsed = make_url(url)
    if parsed.drivername == "postgresql":  # plain postgresql:// means psycopg2, which we do not ship
        parsed = parsed.set(drivername="postgresql+psycopg")
    try:
        engine = create_engine(parsed)
    except ImportError as err:
        raise StoreError(f"--db {shown}: database driver missing ({err})") from None
    if engine.dialect.name == "sqlite":
        _sqlite_setup(engine)
    try:
        migrate(engine)
    except StoreError as err:
        engine.dispose()
        raise StoreError(f"--db {shown}: {err}") from None
    except DBAPIError as err:  # unreachable server, refused login, a file that is not a database, ...
        engine.dispose()
        reason = str(err.orig).strip().splitlines()[0] if err.orig else str(err)
        raise StoreError(f"--db {shown}: cannot open the database ({reason})") from None
    return engine


def _shown(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def _sqlite_setup(engine) -> None:
    """WAL + NORMAL (atomic, safe against a killed process), foreign keys, and ``BEGIN IMMEDIATE``.

    pysqlite would open transactions lazily and run DDL outside them; taking
    the write lock at BEGIN instead makes every transaction (schema changes
    included) wait its turn for ``busy_timeout`` rather than fail with
    "database is locked" when another process wrote in between.
    """

    @event.listens_for(engine, "connect")
    def _connect(conn, _record):
        conn.isolation_level = None  # we emit BEGIN ourselves, below
        cur = conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_MS}")
        # Turning a new file to WAL takes an exclusive lock, and SQLite reports "locked" at once (no busy
        # handler) when another process opens the file at that moment: retry (seen: 1 in ~40 fresh files
        # opened by 6 processes together).
        _retrying(lambda: cur.execute("PRAGMA journal_mode=WAL"), attempts=10, errors=(sqlite3.OperationalError,))
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE")


# ------------------------------------------------------------------ schema version


@functools.cache
def _scripts():
    from alembic.script import ScriptDirectory

    return ScriptDirectory(str(MIGRATIONS))


def head() -> str:
    """The newest revision among the migration scripts (what :data:`SCHEMA` must say)."""
    return _scripts().get_current_head()


def migrate(engine) -> None:
    """Bring the database to :data:`SCHEMA` in one locked transaction; refuse a revision we do not know.

    A database from before the schema was versioned (run tables, no
    ``alembic_version``) holds the :data:`BASELINE` tables; it is checked and
    stamped, then upgraded like any other.
    """
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":  # one schema change at a time across processes
            conn.execute(text("SELECT pg_advisory_xact_lock(7201730)"))
        versioned = inspect(conn).has_table("alembic_version")
        current = conn.execute(text("SELECT version_num FROM alembic_version")).scalar() if versioned else None
        if current == SCHEMA:
            return
        from alembic import command
        from alembic.config import Config
        from alembic.util import CommandError

        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS))
        cfg.attributes["connection"] = conn
        if current is None and inspect(conn).has_table("run"):
            _check_baseline(conn)
            command.stamp(cfg, BASELINE)
        elif current is not None:
            try:
                _scripts().get_revision(current)
            except CommandError:
                raise StoreError(f"schema revision {current!r} is unknown to this catallax (it knows up to "
                                 f"{SCHEMA!r}); the database was written by a newer or different version") from None
        command.upgrade(cfg, "head")


def _check_baseline(conn) -> None:
    """An unversioned database must hold exactly the baseline columns, or we cannot tell what it is."""
    expected = {"run": {"id", "scenario", "seed", "config", "status", "started_at", "finished_at", "episodes",
                        "ledger_hash", "summary"},
                "agent": {"run_id", "agent_id", "parent_id", "born_episode", "died_episode", "final_wealth", "skill"},
                "transfer": {"run_id", "seq", "src", "dst", "amount", "reason", "episode", "step"},
                "episode": {"run_id", "episode", "success", "steps", "reward", "population"},
                "checkpoint": {"run_id", "episodes_done", "transfers", "state"}}
    insp = inspect(conn)
    for table, columns in expected.items():
        found = {c["name"] for c in insp.get_columns(table)} if insp.has_table(table) else set()
        if found != columns:
            raise StoreError(f"unversioned database with an incompatible schema (table {table!r} has columns "
                             f"{sorted(found)}, expected {sorted(columns)})")


# ------------------------------------------------------------------ writing runs


def _retrying(fn, attempts: int = 5, errors=(OperationalError,)):
    """Run a write transaction, again if SQLite still reports a lock after busy_timeout (a last resort)."""
    for attempt in range(attempts):
        try:
            return fn()
        except errors as err:
            if "locked" not in str(err) or attempt == attempts - 1:
                raise
            time.sleep(0.05 * 2**attempt)


class RunStore:
    """Writes one run: a row in ``run`` at the start, a batch per round, the summary at the end.

    Each round is one transaction, its checkpoint (when given) included, so the
    database never holds half a round and a checkpoint always matches the rows
    beside it. :meth:`attach` reopens a run at its checkpoint for resuming.
    """

    def __init__(self, engine, run_id: str, seq: int = 0):
        self.engine, self.run_id, self._seq = engine, run_id, seq
        self._writes = 0

    @classmethod
    def create(cls, url: str, scenario: str, seed: int, config: dict, run_id: str | None = None,
               sweep: str | None = None) -> RunStore:
        store = cls(make_engine(url), run_id or new_run_id())

        def write():
            with Session(store.engine) as s:
                s.add(Run(id=store.run_id, scenario=scenario, seed=seed, config=json.dumps(config), sweep=sweep,
                          started_at=datetime.now(UTC)))
                s.commit()

        _retrying(write)
        return store

    @classmethod
    def attach(cls, url: str, run_id: str) -> tuple[RunStore, Run, Checkpoint | None]:
        """Reopen a run; rows written after its checkpoint (a round that was cut off) are removed.

        Raises :class:`StoreError` if the database has no such run."""
        engine = make_engine(url)

        def reopen():
            with Session(engine, expire_on_commit=False) as s:
                run = s.get(Run, run_id)
                if run is None:
                    raise StoreError(f"run {run_id}: not found in {_shown(url)}")
                ckpt = s.get(Checkpoint, run_id)
                episodes, seq = (ckpt.episodes_done, ckpt.transfers) if ckpt else (0, 0)
                s.execute(delete(Transfer).where(Transfer.run_id == run_id, Transfer.seq >= seq))
                s.execute(delete(Episode).where(Episode.run_id == run_id, Episode.episode >= episodes))
                if ckpt is None:
                    s.execute(delete(Agent).where(Agent.run_id == run_id))
                else:
                    s.execute(delete(Agent).where(Agent.run_id == run_id, Agent.born_episode > episodes))
                    s.execute(update(Agent).where(Agent.run_id == run_id, Agent.died_episode >= episodes)
                              .values(died_episode=None))
                run.status = "running"
                s.add(run)
                s.commit()
                return run, ckpt, seq

        run, ckpt, seq = _retrying(reopen)
        return cls(engine, run_id, seq), run, ckpt

    def write_round(self, log, checkpoint: bytes | None = None, episodes_done: int = 0) -> None:
        """Persist a :class:`market.model.RoundLog` (and a checkpoint) in one transaction."""
        t = log.transfers
        start, end = self._seq, self._seq + len(t)
        self._writes += 1
        names = ("seq", *t.dtype.names)  # the ledger's columns (TRANSFER_DTYPE), numbered
        rows = [dict(zip(names, values), run_id=self.run_id)
                for values in zip(range(start, end), *(t[name].tolist() for name in t.dtype.names))]

        def write():
            with Session(self.engine) as s:
                if log.births:
                    s.execute(insert(Agent), [dict(run_id=self.run_id, **b) for b in log.births])
                if rows:
                    s.execute(insert(Transfer), rows)
                if log.episodes:
                    s.execute(insert(Episode), [dict(run_id=self.run_id, **e) for e in log.episodes])
                if log.deaths:  # ORM bulk update by primary key: one executemany
                    s.execute(update(Agent), [dict(run_id=self.run_id, **d) for d in log.deaths])
                if checkpoint is not None:
                    s.merge(Checkpoint(run_id=self.run_id, episodes_done=episodes_done, transfers=end,
                                       state=checkpoint))
                _fault_hang_in_write(self._writes)
                s.commit()

        _retrying(write)
        self._seq = end

    def finish(self, summary: dict, final_wealth: dict[int, int]) -> None:
        """Store every account's final balance (dead ones end at zero) and the summary."""

        def write():
            with Session(self.engine) as s:
                s.execute(update(Agent).where(Agent.run_id == self.run_id).values(final_wealth=0))
                if final_wealth:
                    s.execute(update(Agent), [{"run_id": self.run_id, "agent_id": a, "final_wealth": w}
                                              for a, w in final_wealth.items()])
                run = s.get(Run, self.run_id)
                run.status, run.finished_at = "finished", datetime.now(UTC)
                run.episodes, run.ledger_hash = summary["episodes"], summary["ledger_hash"]
                run.summary = json.dumps(summary)
                s.add(run)
                s.commit()

        _retrying(write)

    def fail(self, error: str) -> None:
        """Mark the run failed (it raised); its rows up to the last checkpoint stay, and it can be resumed."""

        def write():
            with Session(self.engine) as s:
                s.execute(update(Run).where(Run.id == self.run_id)
                          .values(status="failed", summary=json.dumps({"error": error})))
                s.commit()

        _retrying(write)


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def _fault_hang_in_write(count: int) -> None:
    """Fault injection for the crash tests: ``CATALLAX_FAULT_HANG_IN_WRITE=N`` stops this process's N-th
    round write inside its open transaction (every row sent, nothing committed) and says so on stderr,
    so a test can SIGKILL it in the middle of a database write."""
    if os.environ.get("CATALLAX_FAULT_HANG_IN_WRITE") == str(count):
        print(f"catallax: fault injection: hanging inside write {count}, transaction open", file=sys.stderr, flush=True)
        time.sleep(3600)


# ------------------------------------------------------------------ reading runs, moving them between databases


def run_exists(engine, run_id: str) -> bool:
    with Session(engine) as s:
        return s.get(Run, run_id) is not None


def load_episodes(engine, run_id: str) -> list[dict]:
    """The run's episode rows, in order, as the dicts the model produced."""
    with Session(engine) as s:
        rows = s.exec(select(Episode).where(Episode.run_id == run_id).order_by(Episode.episode)).all()
    return [r.model_dump(exclude={"run_id"}) for r in rows]


def load_transfers(engine, run_id: str) -> np.ndarray:
    """The run's transfer log, in order, as a structured array (see market.ledger)."""
    with Session(engine) as s:
        columns = (getattr(Transfer, name) for name in TRANSFER_DTYPE.names)
        rows = s.exec(select(*columns).where(Transfer.run_id == run_id).order_by(Transfer.seq)).all()
    return np.array([tuple(r) for r in rows], dtype=TRANSFER_DTYPE)


def export_run(engine, run_id: str) -> dict[str, list[dict]]:
    """Every row of one run, table by table: what a sweep worker ships to the driver that owns SQLite."""
    with engine.connect() as conn:
        return {m.__tablename__: [dict(r) for r in conn.execute(
            sa_select(m.__table__).where((m.id if m is Run else m.run_id) == run_id)
            .order_by(*m.__table__.primary_key.columns)).mappings()] for m in MODELS}


def import_run(engine, rows: dict[str, list[dict]]) -> None:
    """Insert an exported run in one transaction: all of its rows land, or none (a second import fails)."""

    def write():
        with engine.begin() as conn:
            for m in MODELS:
                if rows.get(m.__tablename__):
                    conn.execute(insert(m.__table__), rows[m.__tablename__])

    _retrying(write)
