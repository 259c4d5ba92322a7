"""The schema's versions: bring a database to :data:`market.schema.SCHEMA`, or refuse one we do not know.

Versioned with alembic (``market/migrations``): opening a database (market/database.py) upgrades an older
one, and refuses one whose revision this code does not know. An empty database gets the current schema
straight from the table classes and is stamped with its revision, as alembic's own docs build a database from
scratch (importing alembic alone costs a fresh run ~0.25 s); a test keeps that equal to what the migrations
build.
"""

from __future__ import annotations

import functools

from sqlalchemy import Column, MetaData, PrimaryKeyConstraint, String, Table, insert, inspect, text
from sqlmodel import SQLModel

from market.ledger import Reason
from market.schema import BASELINE, MIGRATIONS, SCHEMA, TABLES, VIEWS, ReasonName, StoreError


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
