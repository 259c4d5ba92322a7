"""Opening a database: an engine on an up-to-date schema, SQLite set up for several writers, and the checks a
database from anyone must pass before we write to it (no triggers or rules of its own).

SQLite by default (one file, WAL journal); any SQLAlchemy URL (PostgreSQL) works the same. Several processes
may write runs into one database at once: SQLite transactions take the write lock up front (``BEGIN
IMMEDIATE``) and wait for it (``busy_timeout``); schema changes (market/migrate.py) happen under a lock on
either backend. The tables are ``market/schema.py``.
"""

from __future__ import annotations

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
    if readonly and sqlite_file:  # in a folder this process cannot write, SQLite could not make a WAL file's
        # shared-memory index: the file is read as it is on disk (immutable), as of its last checkpoint
        frozen = "&immutable=1" if not os.access(Path(parsed.database).absolute().parent, os.W_OK) else ""
        parsed = parsed.set(database=f"file:{quote(str(Path(parsed.database).absolute()))}?mode=ro{frozen}",
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
