"""The run tables and the database that holds them: SQLModel classes, the engine, schema versions.

SQLite by default (one file, WAL journal); any SQLAlchemy URL (PostgreSQL)
works the same. Amounts are INTEGER micro-credits. The ``transfer`` view alone
is enough to recompute every final balance in ``agent`` (see tests). Writing
and reading runs is ``market/store.py``.

The two logs that grow with a run, transfers and episodes, are stored compactly
(a run's database must cost <= 25 bytes per transfer): ``transfer_log`` and
``episode_log`` hold integers only, keyed by one integer ``id = (num - 1) *
LOG_STRIDE + position`` where ``num`` is the run's small number
(``run_number``). On SQLite that id is the rowid itself, so a row is its
integers and nothing else (no run id string, no second index, pages filled by
appending); a run's rows are one id range. The views ``transfer`` and
``episode`` show them as before, by run id (and the transfer's ``reason_name``
from the ``reason`` table), for plain SQL; the code reads and writes the logs.

The schema is versioned with alembic (``market/migrations``): opening a
database upgrades an older one, and refuses one whose revision this code does
not know. An empty database gets the current schema straight from the classes
below and is stamped with its revision, as alembic's own docs build a database
from scratch (importing alembic alone costs a fresh run ~0.25 s); a test keeps
that equal to what the migrations build. Several processes may write runs into
one database at once: SQLite transactions take the write lock up front (``BEGIN
IMMEDIATE``) and wait for it (``busy_timeout``), and schema changes happen under
a lock on either backend.
"""

from __future__ import annotations

import functools
import sqlite3
import time
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import (BigInteger, Column, Float, Integer, LargeBinary, MetaData, PrimaryKeyConstraint, SmallInteger,
                        String, Table, event, insert, inspect, text)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, OperationalError
from sqlmodel import Field, SQLModel, create_engine

from market.ledger import Reason

MIGRATIONS = Path(__file__).parent / "migrations"
SCHEMA = "0006"  # the newest revision in MIGRATIONS (a test keeps them equal); alembic loads only to migrate
BASELINE = "0001"  # the schema databases had before it was versioned
SQLITE_BUSY_MS = 60_000  # how long a SQLite writer waits for the lock before "database is locked"
LOG_STRIDE = 10**9  # ids per run in the logs: a run holds at most this many transfers (and episodes)


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
    tokens: int | None = Field(default=None, sa_column=Column(BigInteger))  # LLM tokens its calls used (at death/end)


class RunNumber(SQLModel, table=True):
    """The run's small number, which the logs store instead of its id string (numbered by the database)."""

    __tablename__ = "run_number"
    num: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="run.id", unique=True)


class ReasonName(SQLModel, table=True):
    """The names of the transfer reason codes (``market.ledger.Reason``), for the ``transfer`` view."""

    __tablename__ = "reason"
    code: int = Field(sa_column=Column(SmallInteger, primary_key=True, autoincrement=False))
    name: str = Field(unique=True)


LOG_ID = BigInteger().with_variant(Integer, "sqlite")  # SQLite's INTEGER PRIMARY KEY is the rowid itself


class TransferLog(SQLModel, table=True):
    """One transfer: ``id`` is (run number - 1) * LOG_STRIDE + seq; widest columns first (PostgreSQL packs them)."""

    __tablename__ = "transfer_log"
    id: int = Field(sa_column=Column(LOG_ID, primary_key=True, autoincrement=False))
    amount: int = Field(sa_column=Column(BigInteger, nullable=False))
    src: int
    dst: int
    episode: int
    step: int
    reason: int = Field(sa_column=Column(SmallInteger, nullable=False))


class EpisodeLog(SQLModel, table=True):
    """One episode: ``id`` is (run number - 1) * LOG_STRIDE + episode."""

    __tablename__ = "episode_log"
    id: int = Field(sa_column=Column(LOG_ID, primary_key=True, autoincrement=False))
    reward: int = Field(sa_column=Column(BigInteger, nullable=False))
    steps: int
    population: int
    success: bool


class View(SQLModel):
    """Views, read through the ORM; their own metadata, so table creation and schema comparison skip them
    (migration 0004 creates them, and :func:`create_current` from :data:`VIEWS`)."""

    metadata = MetaData()


class Transfer(View, table=True):
    """The ``transfer`` view: one row per transfer, by run id and seq, with the reason's name."""

    run_id: str = Field(primary_key=True)
    seq: int = Field(primary_key=True)
    src: int
    dst: int
    amount: int
    reason: int
    reason_name: str | None
    episode: int
    step: int


class Episode(View, table=True):
    """The ``episode`` view: one row per episode, by run id."""

    run_id: str = Field(primary_key=True)
    episode: int = Field(primary_key=True)
    success: bool
    steps: int
    reward: int
    population: int


_FIRST = f"CAST(n.num - 1 AS BIGINT) * {LOG_STRIDE}"  # a run's first log id (BIGINT: int4 would overflow)
_IN_RUN = f"BETWEEN {_FIRST} AND {_FIRST} + {LOG_STRIDE - 1}"
VIEWS = (
    f"""CREATE VIEW transfer AS
SELECT n.run_id, t.id - {_FIRST} AS seq, t.src, t.dst, t.amount, t.reason, r.name AS reason_name, t.episode, t.step
FROM run_number n JOIN transfer_log t ON t.id {_IN_RUN} LEFT JOIN reason r ON r.code = t.reason""",
    f"""CREATE VIEW episode AS
SELECT n.run_id, e.id - {_FIRST} AS episode, e.success, e.steps, e.reward, e.population
FROM run_number n JOIN episode_log e ON e.id {_IN_RUN}""",
)
"""The views of the current schema, as :class:`Transfer` and :class:`Episode` read them."""


class Checkpoint(SQLModel, table=True):
    """The latest resumable state of a run, written in the same transaction as its round."""

    run_id: str = Field(primary_key=True, foreign_key="run.id")
    episodes_done: int
    transfers: int  # rows of the transfer log this state has seen
    state: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


class RoundUsage(SQLModel, table=True):
    """What one round's LLM calls used, per engine (none for a round that called no model): written with the round,
    so a resumed run adds the rounds before its checkpoint to what its own process counts, and reports the whole
    run's tokens and engine time (market/store.py ``load_usage``)."""

    __tablename__ = "round_usage"
    run_id: str = Field(primary_key=True, foreign_key="run.id")
    episode: int = Field(primary_key=True)  # the round's first episode
    backend: str = Field(primary_key=True)  # the engine: its name and model ("hf:smollm2")
    prompt_tokens: int = Field(sa_column=Column(BigInteger, nullable=False))
    completion_tokens: int = Field(sa_column=Column(BigInteger, nullable=False))
    seconds: float = Field(sa_column=Column(Float, nullable=False))  # time inside the engine's calls


class Lease(SQLModel, table=True):
    """Which process writes a run: taken when a run or resume starts, renewed by every round, dropped at the end.

    Every write of the run checks ``token`` in its own transaction, so a writer whose lease was taken over
    (it looked dead) cannot write another row; see ``market/store.py``."""

    run_id: str = Field(primary_key=True, foreign_key="run.id")
    token: str  # this writer's own id
    host: str
    pid: int
    since: datetime
    heartbeat: datetime  # the last round it wrote (or when it took the lease)


MODELS = (Run, Agent, Transfer, Episode, Checkpoint, RoundUsage)  # a run's record as exported, parents first
TABLES = {m.__tablename__ for m in (Run, Agent, Checkpoint, Lease, RunNumber, ReasonName, TransferLog, EpisodeLog,
                                    RoundUsage)}


def make_engine(url: str, readonly: bool = False):
    """An engine on an up-to-date schema; SQLite files get WAL, foreign keys and write locks taken up front.

    Raises :class:`StoreError` for a database that cannot be opened or was
    written by a schema revision this code does not know; nothing is written then.
    ``readonly``: for commands that only read: the database is opened read-only
    (SQLite ``mode=ro``; PostgreSQL read-only transactions) and must already
    hold this schema revision; nothing, not even its journal mode, is changed.
    """
    shown = shown_url(url)
    parsed = make_url(url)
    if parsed.drivername == "postgresql":  # plain postgresql:// means psycopg2, which we do not ship
        parsed = parsed.set(drivername="postgresql+psycopg")
    sqlite_file = parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:")
    connect_args = {}
    if readonly and sqlite_file:
        parsed = parsed.set(database=f"file:{quote(str(Path(parsed.database).absolute()))}?mode=ro",
                            query={"uri": "true"})
    elif readonly and parsed.get_backend_name() == "postgresql":
        connect_args = {"options": "-c default_transaction_read_only=on"}
    try:
        engine = create_engine(parsed, connect_args=connect_args)
    except ImportError as err:
        raise StoreError(f"--db {shown}: database driver missing ({err})") from None
    if engine.dialect.name == "sqlite":
        _sqlite_setup(engine, readonly)
    try:
        check(engine) if readonly else migrate(engine)
        if not readonly:
            refuse_foreign_code(engine)
        if engine.dialect.name == "sqlite" and not readonly:
            _wal(engine)  # only once the file is known to be ours: a foreign file is left as it was
    except StoreError as err:
        engine.dispose()
        raise StoreError(f"--db {shown}: {err}") from None
    except DBAPIError as err:  # unreachable server, refused login, a file that is not a database, ...
        engine.dispose()
        reason = str(err.orig).strip().splitlines()[0] if err.orig else str(err)
        raise StoreError(f"--db {shown}: cannot open the database ({reason})") from None
    return engine


def refuse_foreign_code(engine) -> None:
    """A database we write holds no triggers (SQLite, PostgreSQL) or rewrite rules (PostgreSQL): catallax
    makes none, and one planted in a shared file would run on our writes (rewrite a run's config, drop
    transfers). Raises :class:`StoreError` naming them; a read-only open never fires them, so reports read on."""
    with engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            found = conn.execute(text("SELECT 'trigger', name, tbl_name FROM sqlite_master WHERE type = 'trigger' "
                                      "ORDER BY name")).all()
        elif conn.dialect.name == "postgresql":
            found = conn.execute(text(
                "SELECT 'trigger', t.tgname, c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE NOT t.tgisinternal AND n.nspname = current_schema() "
                "UNION ALL SELECT 'rule', rulename, tablename FROM pg_rules WHERE schemaname = current_schema() "
                "ORDER BY 2")).all()
        else:
            found = []
    if found:
        shown = ", ".join(f"{kind} {name!r} on {table!r}" for kind, name, table in found[:5])
        raise StoreError(f"holds {shown}{' ...' if len(found) > 5 else ''}: a catallax database has no triggers or "
                         "rules, and these would run on its writes; refusing to write (drop them, or copy the runs "
                         "out with a read-only command)")


def shown_url(url: str) -> str:
    """The URL as error messages show it: the password as ***."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def _sqlite_setup(engine, readonly: bool) -> None:
    """NORMAL sync (atomic with WAL, safe against a killed process), foreign keys, and ``BEGIN IMMEDIATE``;
    a new file gets incremental auto-vacuum, so a finished run gives back the pages its checkpoints freed.

    pysqlite would open transactions lazily and run DDL outside them; taking
    the write lock at BEGIN instead makes every transaction (schema changes
    included) wait its turn for ``busy_timeout`` rather than fail with
    "database is locked" when another process wrote in between. A read-only
    connection begins plainly (it never takes the write lock).
    """

    @event.listens_for(engine, "connect")
    def _connect(conn, _record):
        conn.isolation_level = None  # we emit BEGIN ourselves, below
        cur = conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_MS}")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        if not readonly and cur.execute("PRAGMA page_count").fetchone()[0] == 0:  # a new file (setting it
            cur.execute("PRAGMA auto_vacuum=INCREMENTAL")  # in an existing one would write its header)
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn):
        conn.exec_driver_sql("BEGIN" if readonly else "BEGIN IMMEDIATE")


def _wal(engine) -> None:
    """Switch the file to WAL (it stays so; a no-op when it is already). Turning a file to WAL takes an
    exclusive lock, and SQLite reports "locked" at once (no busy handler) when another process opens the
    file at that moment: retry (seen: 1 in ~40 fresh files opened by 6 processes together)."""
    raw = engine.raw_connection()
    try:
        retrying(lambda: raw.driver_connection.execute("PRAGMA journal_mode=WAL"), attempts=10,
                 errors=(sqlite3.OperationalError,))
    finally:
        raw.close()


def retrying(fn, attempts: int = 5, errors=(OperationalError,)):
    """Run a write transaction, again if SQLite still reports a lock after busy_timeout (a last resort)."""
    for attempt in range(attempts):
        try:
            return fn()
        except errors as err:
            if "locked" not in str(err) or attempt == attempts - 1:
                raise
            time.sleep(0.05 * 2**attempt)


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

    An empty database gets the current schema at once (:func:`create_current`). A database from before the
    schema was versioned (run tables, no ``alembic_version``) holds the :data:`BASELINE` tables; it is
    checked and stamped, then upgraded like any other.
    """
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":  # one schema change at a time across processes
            conn.execute(text("SELECT pg_advisory_xact_lock(7201730)"))
        tables = inspect(conn).get_table_names()
        if not tables:
            create_current(conn)
            return
        versioned = "alembic_version" in tables
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


def create_current(conn) -> None:
    """The :data:`SCHEMA` revision in an empty database: the tables from their classes, the reason names from
    :class:`market.ledger.Reason`, :data:`VIEWS`, and alembic's version table saying :data:`SCHEMA`."""
    SQLModel.metadata.create_all(conn, tables=[SQLModel.metadata.tables[name] for name in sorted(TABLES)])
    conn.execute(insert(ReasonName.__table__), [{"code": int(r), "name": r.name} for r in Reason])
    for view in VIEWS:
        conn.execute(text(view))
    version = Table("alembic_version", MetaData(), Column("version_num", String(32), nullable=False),
                    PrimaryKeyConstraint("version_num", name="alembic_version_pkc"))
    version.create(conn)
    conn.execute(insert(version).values(version_num=SCHEMA))


def check(engine) -> None:
    """For a read-only open: the database must hold exactly :data:`SCHEMA` (reading changes nothing)."""
    with engine.connect() as conn:
        versioned = inspect(conn).has_table("alembic_version")
        current = conn.execute(text("SELECT version_num FROM alembic_version")).scalar() if versioned else None
        if current == SCHEMA:
            return
        if current is None and not inspect(conn).has_table("run"):
            raise StoreError("not a catallax database (no run tables)")
        if current is None:
            _check_baseline(conn)
    known = [s.revision for s in _scripts().walk_revisions()]
    if current is None or current in known:
        raise StoreError(f"schema revision {current or BASELINE!r} is older than this catallax's {SCHEMA!r}; "
                         "a command that writes (catallax run, resume) upgrades it")
    raise StoreError(f"schema revision {current!r} is unknown to this catallax (it knows up to {SCHEMA!r}); "
                     "the database was written by a newer or different version")


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
