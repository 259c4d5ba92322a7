"""Reading a stored run back: its row, its episodes, its transfer log and balances, its LLM usage, and every
row of it (what a sweep worker ships to its driver, market/store.py ``import_run``).

Transfers and episodes are read from the compact logs (``TransferLog``, ``EpisodeLog``, market/schema.py) by
the run's id range; a value of a foreign database is checked as it is read (market/reading.py). Writing runs
is ``market/store.py``, which also offers these readers to its callers.
"""

from __future__ import annotations

import numpy as np
from sqlalchemy import func, select
from sqlmodel import Session

from market.ledger import TRANSFER_DTYPE
from market.reading import checked_ints, connected
from market.schema import LOG_STRIDE, MODELS, EpisodeLog, HeldoutEval, RoundUsage, Run, RunNumber, StoreError, TransferLog

TRANSFER_COLUMNS = ("id", *TRANSFER_DTYPE.names)  # a transfer_log row: the id, then the ledger's columns
EPISODE_COLUMNS = ("id", "success", "steps", "reward", "population")  # a RoundLog episode's, "episode" as the id


def first_id(num: int) -> int:
    """The first log id of the run numbered ``num`` (see market.schema)."""
    return (num - 1) * LOG_STRIDE


def run_first_id(s, run_id: str) -> int:
    num = s.execute(select(RunNumber.num).where(RunNumber.run_id == run_id)).scalar_one_or_none()
    if type(num) is not int or not 1 <= num <= MAX_RUN_NUMBER:  # a foreign database's: its ids must fit int64
        raise StoreError(f"run_number.num: {num!r:.60} is not a run number (1 to {MAX_RUN_NUMBER})")
    return first_id(num)


MAX_RUN_NUMBER = (2**63 - 1) // LOG_STRIDE  # the last run whose log ids fit int64


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


def load_heldout(engine, run_id: str) -> list[dict]:
    """The run's stored learning-curve points (table ``heldout_eval``), in episode order."""
    c = HeldoutEval.__table__.c
    with engine.connect() as conn:
        rows = conn.execute(select(HeldoutEval.__table__).where(c.run_id == run_id).order_by(c.episode)).mappings()
        return [{k: v for k, v in row.items() if k != "run_id"} for row in rows]


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
    run stores millions of rows). Integer sums in both engines (PostgreSQL's bigint sum is numeric)."""
    moves = "SELECT dst AS account, amount AS delta FROM {table} {rows} UNION ALL SELECT src, -amount FROM {table} {rows}"
    return {int(account): int(total) for account, total in
            _query_log(engine, run_id, f"SELECT account, SUM(delta) FROM ({moves}) AS moves GROUP BY account")}


def export_run(engine, run_id: str) -> dict[str, list[dict]]:
    """Every row of one run, table by table: what a sweep worker ships to the driver that owns SQLite."""
    with engine.connect() as conn:
        return {m.__tablename__: [dict(r) for r in conn.execute(
            select(m.__table__).where((m.id if m is Run else m.run_id) == run_id)
            .order_by(*m.__table__.primary_key.columns)).mappings()] for m in MODELS}
