"""Reading a database that may come from anyone: one snapshot per reader, and stored values checked as they
are read (a foreign JSON column, a log value that is not an integer in range) into a :class:`StoreError`
naming the table and column, which the CLI prints as one line (exit 2)."""

from __future__ import annotations

import json
from contextlib import contextmanager

import numpy as np
from sqlalchemy import Connection

from market.schema import StoreError


@contextmanager
def snapshot(engine):
    """A connection in one read transaction: every read through it sees the database at one moment, so a run
    that another process is writing reads as it was at its last committed round (SQLite in WAL: the first
    read's snapshot; PostgreSQL: REPEATABLE READ). Pass it where a reader takes an engine."""
    with engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            yield conn


@contextmanager
def connected(bind):
    """``bind`` itself when it is a connection (a :func:`snapshot`), else a new connection of the engine."""
    if isinstance(bind, Connection):
        yield bind
    else:
        with bind.connect() as conn:
            yield conn


def stored_json(text: str | None, where: str):
    """A JSON column of a run (``run.config``, ``run.summary``) decoded, or a StoreError naming it: the
    database may come from anyone. None stays None."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except (ValueError, TypeError, RecursionError) as err:
        raise StoreError(f"{where}: not valid JSON ({' '.join(str(err).split())[:120]})") from None


def checked_ints(rows: list[tuple], columns: tuple[str, ...], table: str, dtype=None) -> np.ndarray:
    """``rows`` as an integer array (``dtype``: a structured one, else int64 columns), or a StoreError naming
    the table, column and value that is not an integer in range: a database may come from anyone."""
    try:
        return np.array(rows, dtype=dtype or np.int64).reshape(len(rows), *(() if dtype else (len(columns),)))
    except (ValueError, TypeError, OverflowError):
        for i, name in enumerate(columns):
            for row in rows:
                try:
                    np.array(row[i], dtype=dtype[name] if dtype is not None else np.int64)
                except (ValueError, TypeError, OverflowError):
                    raise StoreError(f"{table}.{name}: {row[i]!r:.60} is not an integer in range") from None
        raise StoreError(f"{table}: its rows are not integers") from None
