"""The run tables: SQLModel classes, the views over the compact logs, and the schema's constants.

SQLite by default (one file, WAL journal); any SQLAlchemy URL (PostgreSQL)
works the same. Amounts are INTEGER micro-credits. The ``transfer`` view alone
is enough to recompute every final balance in ``agent`` (see tests). Opening a database is
``market/database.py``, its schema versions ``market/migrate.py``; writing runs is ``market/store.py``,
reading them back ``market/runs.py``.

The two logs that grow with a run, transfers and episodes, are stored compactly
(a run's database must cost <= 25 bytes per transfer): ``transfer_log`` and
``episode_log`` hold integers only, keyed by one integer ``id = (num - 1) *
LOG_STRIDE + position`` where ``num`` is the run's small number
(``run_number``). On SQLite that id is the rowid itself, so a row is its
integers and nothing else (no run id string, no second index, pages filled by
appending); a run's rows are one id range. The views ``transfer`` and
``episode`` show them as before, by run id (and the transfer's ``reason_name``
from the ``reason`` table), for plain SQL; the code reads and writes the logs.

The schema is versioned with alembic (``market/migrations``, driven by ``market/migrate.py``): a
revision here is the revision the classes below build.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from sqlalchemy import BigInteger, Column, Float, Integer, LargeBinary, MetaData, SmallInteger
from sqlmodel import Field, SQLModel

MIGRATIONS = Path(__file__).parent / "migrations"
SCHEMA = "0007"  # the newest revision in MIGRATIONS (a test keeps them equal); alembic loads only to migrate
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


class HeldoutEval(SQLModel, table=True):
    """One point of a run's learning curve: the frozen market's success on the scenario's fixed held-out problems
    after a round (every ``run.eval_every`` rounds; scenarios/run/curve.py), written with that round, so a resumed
    run's curve holds the points before its checkpoint without playing them again."""

    __tablename__ = "heldout_eval"
    run_id: str = Field(primary_key=True, foreign_key="run.id")
    episode: int = Field(primary_key=True)  # episodes done when it was measured (the round's end)
    round: int  # rounds done
    success: float = Field(sa_column=Column(Float, nullable=False))  # share of the held-out problems solved
    reward: float = Field(sa_column=Column(Float, nullable=False))  # mean world reward on them
    problems: int  # how many held-out problems
    seconds: float = Field(sa_column=Column(Float, nullable=False))  # time the evaluation took (0: reused)
    fingerprint: str  # of the state it read (policy and population): an equal one is not played again


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


MODELS = (Run, Agent, Transfer, Episode, Checkpoint, RoundUsage, HeldoutEval)  # a run's record as exported, parents first
TABLES = {m.__tablename__ for m in (Run, Agent, Checkpoint, Lease, RunNumber, ReasonName, TransferLog, EpisodeLog,
                                    RoundUsage, HeldoutEval)}
