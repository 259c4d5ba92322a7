"""Opening a database: an engine on an up-to-date schema, SQLite set up for several writers, and the checks a
database from anyone must pass before we write to it (no triggers or rules of its own).

Every statement runs under a time limit (:func:`statement_limit`, ``CATALLAX_STATEMENT_TIMEOUT`` seconds,
default 60): a database from anyone may hold a view that never finishes (a recursive query without end in
place of a table), and a reader must neither hang nor stop answering Ctrl-C. PostgreSQL enforces the limit
itself (``statement_timeout``); on SQLite a progress handler aborts the statement once it is past its
deadline, and, being Python code that SQLite calls while the statement runs, lets the interpreter act on a
signal (Ctrl-C) mid-statement instead of after it.

SQLite by default (one file, WAL journal); any SQLAlchemy URL (PostgreSQL) works the same. Several processes
may write runs into one database at once: SQLite transactions take the write lock up front (``BEGIN
IMMEDIATE``) and wait for it (``busy_timeout``); schema changes (market/migrate.py) happen under a lock on
either backend. The tables are ``market/schema.py``.
"""

from __future__ import annotations

import math
import os
import sqlite3
import time
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, OperationalError
from sqlmodel import create_engine

from market.migrate import check, migrate
from market.schema import SQLITE_BUSY_MS, StoreError

STATEMENT_TIMEOUT_ENV = "CATALLAX_STATEMENT_TIMEOUT"
STATEMENT_TIMEOUT_DEFAULT = 60.0  # seconds one statement may run; far above any this code issues on its tables
PROGRESS_STEPS = 10_000  # SQLite VM steps between two looks at the clock (about a millisecond)


def statement_limit() -> float:
    """Seconds one statement may run: ``CATALLAX_STATEMENT_TIMEOUT`` (a number > 0), else the default."""
    raw = os.environ.get(STATEMENT_TIMEOUT_ENV, "").strip()
    if not raw:
        return STATEMENT_TIMEOUT_DEFAULT
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise StoreError(f"{STATEMENT_TIMEOUT_ENV}={raw!r}: expected a number of seconds > 0")
    return seconds


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
    limit = statement_limit()
    connect_args = {}
    if readonly and sqlite_file:  # in a folder this process cannot write, SQLite could not make a WAL file's
        # shared-memory index: the file is read as it is on disk (immutable), as of its last checkpoint
        frozen = "&immutable=1" if not os.access(Path(parsed.database).absolute().parent, os.W_OK) else ""
        parsed = parsed.set(database=f"file:{quote(str(Path(parsed.database).absolute()))}?mode=ro{frozen}",
                            query={"uri": "true"})
    elif parsed.get_backend_name() == "postgresql":
        options = f"-c statement_timeout={math.ceil(limit * 1000)}"
        connect_args = {"options": options + (" -c default_transaction_read_only=on" if readonly else "")}
    try:
        engine = create_engine(parsed, connect_args=connect_args)
    except ImportError as err:
        raise StoreError(f"--db {shown}: database driver missing ({err})") from None
    if engine.dialect.name == "sqlite":
        _sqlite_setup(engine, readonly, limit)
    _time_limited(engine, limit)
    try:
        if not readonly:  # before our first statement on its tables (a migration's included), and after
            refuse_foreign_code(engine)
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


# Every place a PostgreSQL schema can run code of its own on our statements, as (kind, name, table) rows. The
# project creates none of these (its one column default is a serial's nextval): whatever is found was planted.
_PG_FOREIGN_CODE = """
WITH ours AS (SELECT c.oid, c.relname, c.relkind FROM pg_class c
              WHERE c.relnamespace = CAST(:schema AS regnamespace)),
path AS (SELECT n.oid FROM pg_namespace n WHERE n.nspname = ANY (CAST(:path AS name[])) AND n.nspname <> 'pg_catalog'),
extension AS (SELECT objid FROM pg_depend WHERE deptype = 'e')
SELECT 'trigger', t.tgname::text, o.relname::text FROM pg_trigger t JOIN ours o ON o.oid = t.tgrelid WHERE NOT t.tgisinternal
UNION ALL SELECT 'rule', r.rulename::text, o.relname::text FROM pg_rewrite r JOIN ours o ON o.oid = r.ev_class
  WHERE r.rulename <> '_RETURN'
UNION ALL SELECT 'column default', a.attname::text, o.relname::text FROM pg_attrdef d JOIN ours o ON o.oid = d.adrelid
  JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
  WHERE pg_get_expr(d.adbin, d.adrelid) !~ '^nextval\\(''([a-z_]+\\.)?[a-z_]+''::regclass\\)$' OR a.attgenerated <> ''
UNION ALL SELECT 'constraint', c.conname::text, o.relname::text FROM pg_constraint c JOIN ours o ON o.oid = c.conrelid
  WHERE c.contype NOT IN ('p', 'f', 'u')
UNION ALL SELECT 'column type', a.attname::text, o.relname::text FROM pg_attribute a JOIN ours o ON o.oid = a.attrelid
  JOIN pg_type t ON t.oid = a.atttypid WHERE a.attnum > 0 AND (t.typtype = 'd' OR t.typnamespace <> 'pg_catalog'::regnamespace)
UNION ALL SELECT 'policy', p.polname::text, o.relname::text FROM pg_policy p JOIN ours o ON o.oid = p.polrelid
UNION ALL SELECT 'row security', o.relname::text, o.relname::text FROM pg_class c JOIN ours o ON o.oid = c.oid
  WHERE c.relrowsecurity
UNION ALL SELECT 'index expression', i.indexrelid::regclass::text, o.relname::text FROM pg_index i
  JOIN ours o ON o.oid = i.indrelid WHERE i.indexprs IS NOT NULL OR i.indpred IS NOT NULL
UNION ALL SELECT 'view calling', p.oid::regprocedure::text, o.relname::text FROM pg_rewrite r JOIN ours o ON o.oid = r.ev_class
  JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid AND d.refclassid = 'pg_proc'::regclass
  JOIN pg_proc p ON p.oid = d.refobjid WHERE p.pronamespace <> 'pg_catalog'::regnamespace
UNION ALL SELECT 'function', p.oid::regprocedure::text, p.pronamespace::regnamespace::text FROM pg_proc p
  WHERE p.pronamespace IN (SELECT oid FROM path) AND p.oid NOT IN (SELECT objid FROM extension)
UNION ALL SELECT 'operator', o.oid::regoperator::text, o.oprnamespace::regnamespace::text FROM pg_operator o
  WHERE o.oprnamespace IN (SELECT oid FROM path) AND o.oid NOT IN (SELECT objid FROM extension)
UNION ALL SELECT 'cast', c.castsource::regtype::text || ' to ' || c.casttarget::regtype::text, p.oid::regprocedure::text
  FROM pg_cast c JOIN pg_proc p ON p.oid = c.castfunc
  WHERE p.pronamespace <> 'pg_catalog'::regnamespace AND c.oid NOT IN (SELECT objid FROM extension)
UNION ALL SELECT 'event trigger', e.evtname::text, e.evtevent::text FROM pg_event_trigger e
ORDER BY 1, 2"""


def refuse_foreign_code(engine) -> None:
    """A database we write holds no code of its own that our statements would run: no triggers (SQLite,
    PostgreSQL), and on PostgreSQL none of :data:`_PG_FOREIGN_CODE` (rules, column defaults other than a
    serial's, CHECK constraints, domains and other non-built-in column types, row security, expression
    indexes, views calling functions, functions and operators on the search path that could shadow built-ins,
    casts through functions, event triggers). catallax makes none; one planted in a shared file or schema would
    run on our writes (rewrite a run's config, drop transfers, run a program on the server). Raises
    :class:`StoreError` naming them; a read-only open fires none of the write paths, so reports read on."""
    with engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            found = conn.execute(text("SELECT 'trigger', name, tbl_name FROM sqlite_master WHERE type = 'trigger' "
                                      "ORDER BY name")).all()
        elif conn.dialect.name == "postgresql":  # with only built-ins in reach: the check calls no planted code
            schema, path = conn.execute(text("SELECT pg_catalog.current_schema(), "
                                             "pg_catalog.current_schemas(false)")).one()
            conn.execute(text("SET LOCAL search_path TO pg_catalog"))
            found = conn.execute(text(_PG_FOREIGN_CODE), {"schema": schema, "path": list(path)}).all()
            conn.rollback()
        else:
            found = []
    if found:
        shown = ", ".join(f"{kind} {name!r} on {table!r}" for kind, name, table in found[:5])
        raise StoreError(f"holds {shown}{' ...' if len(found) > 5 else ''}: a catallax database has no code of its "
                         "own (triggers, rules, defaults, constraints, functions), and these would run on its writes; "
                         "refusing to write (drop them, or copy the runs out with a read-only command)")


def shown_url(url: str) -> str:
    """The URL as error messages show it: the password as ***."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


class _Deadline:
    """SQLite's progress handler for one connection: aborts the statement running past its deadline (which
    :meth:`start` sets as each statement begins)."""

    def __init__(self, seconds: float):
        self.seconds, self.expired = seconds, False
        self.start()

    def start(self) -> None:
        self.until, self.expired = time.monotonic() + self.seconds, False

    def __call__(self) -> int:
        if time.monotonic() > self.until:
            self.expired = True
            return 1  # SQLite stops the statement: sqlite3.OperationalError("interrupted")
        return 0


def _time_limited(engine, limit: float) -> None:
    """A statement past ``limit`` ends in a StoreError naming the limit, on either backend; a SQLite statement
    that a signal's handler broke off ends in KeyboardInterrupt, as the signal meant."""

    @event.listens_for(engine, "before_cursor_execute")
    def _start(conn, _cursor, _statement, _parameters, _context, _executemany):
        deadline = conn.info.get("deadline")
        if deadline is not None:
            deadline.start()

    @event.listens_for(engine, "handle_error")
    def _limit(context):
        orig = context.original_exception
        over = StoreError(f"a query ran past the {limit:g}-second statement limit ({STATEMENT_TIMEOUT_ENV}); the "
                          "database may hold a view or table that never finishes")
        if getattr(orig, "sqlstate", None) == "57014" and "statement timeout" in str(orig):  # PostgreSQL
            return over
        if isinstance(orig, sqlite3.OperationalError) and str(orig) == "interrupted":
            deadline = context.connection.info.get("deadline") if context.connection is not None else None
            # else a signal's handler raised inside the progress handler, where SQLite drops the exception
            return over if deadline is not None and deadline.expired else KeyboardInterrupt()
        return None


def _sqlite_setup(engine, readonly: bool, limit: float) -> None:
    """NORMAL sync (atomic with WAL, safe against a killed process), foreign keys, and ``BEGIN IMMEDIATE``;
    a new file gets incremental auto-vacuum, so a finished run gives back the pages its checkpoints freed.

    pysqlite would open transactions lazily and run DDL outside them; taking
    the write lock at BEGIN instead makes every transaction (schema changes
    included) wait its turn for ``busy_timeout`` rather than fail with
    "database is locked" when another process wrote in between. A read-only
    connection begins plainly (it never takes the write lock).
    """

    @event.listens_for(engine, "connect")
    def _connect(conn, record):
        conn.isolation_level = None  # we emit BEGIN ourselves, below
        cur = conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_MS}")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        if not readonly and cur.execute("PRAGMA page_count").fetchone()[0] == 0:  # a new file (setting it
            cur.execute("PRAGMA auto_vacuum=INCREMENTAL")  # in an existing one would write its header)
        cur.close()
        deadline = _Deadline(limit)
        conn.set_progress_handler(deadline, PROGRESS_STEPS)
        record.info["deadline"] = deadline

    @event.listens_for(engine, "begin")
    def _begin(conn):
        conn.exec_driver_sql("BEGIN" if readonly else "BEGIN IMMEDIATE")


def _wal(engine) -> None:
    """Switch the file to WAL (it stays so; a no-op when it is already). Turning a file to WAL takes an
    exclusive lock, and SQLite reports "locked" at once (no busy handler) when another process opens the
    file at that moment: retry (seen: 1 in ~40 fresh files opened by 6 processes together)."""
    raw = engine.raw_connection()
    deadline = raw.info.get("deadline")  # this statement bypasses SQLAlchemy's execute, which starts the clock
    if deadline is not None:
        deadline.start()
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
