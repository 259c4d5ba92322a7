"""Persistence of runs: SQLModel tables and a store that writes once per round.

SQLite by default (one file, WAL journal); any SQLAlchemy URL (PostgreSQL)
works the same. Amounts are INTEGER micro-credits. The ``transfer`` table alone
is enough to recompute every final balance in ``agent`` (see tests).
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone

import numpy as np
from sqlalchemy import BigInteger, Column, LargeBinary, delete, event, insert, update
from sqlmodel import Field, Session, SQLModel, create_engine, select

from market.ledger import TRANSFER_DTYPE


class Run(SQLModel, table=True):
    id: str = Field(primary_key=True)
    scenario: str
    seed: int
    config: str  # JSON of the validated config
    status: str = "running"  # running | finished
    started_at: datetime
    finished_at: datetime | None = None
    episodes: int = 0
    ledger_hash: str | None = None
    summary: str | None = None  # JSON of the final summary


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


def make_engine(url: str):
    """An engine with the tables created; SQLite files get WAL and foreign keys."""
    engine = create_engine(url)
    if engine.dialect.name == "sqlite":

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(conn, _record):
            cur = conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: atomic and safe against a killed process
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

    SQLModel.metadata.create_all(engine)
    return engine


class RunStore:
    """Writes one run: a row in ``run`` at the start, a batch per round, the summary at the end.

    Each round is one transaction, its checkpoint (when given) included, so the
    database never holds half a round and a checkpoint always matches the rows
    beside it. :meth:`attach` reopens a run at its checkpoint for resuming.
    """

    def __init__(self, engine, run_id: str, seq: int = 0):
        self.engine, self.run_id, self._seq = engine, run_id, seq

    @classmethod
    def create(cls, url: str, scenario: str, seed: int, config: dict) -> "RunStore":
        store = cls(make_engine(url), uuid.uuid4().hex[:12])
        with Session(store.engine) as s:
            s.add(Run(id=store.run_id, scenario=scenario, seed=seed, config=json.dumps(config),
                      started_at=datetime.now(timezone.utc)))
            s.commit()
        return store

    @classmethod
    def attach(cls, url: str, run_id: str) -> tuple["RunStore", Run, Checkpoint | None]:
        """Reopen a run; rows written after its checkpoint (a round that was cut off) are removed."""
        engine = make_engine(url)
        with Session(engine, expire_on_commit=False) as s:
            run = s.get(Run, run_id)
            if run is None:
                raise KeyError(run_id)
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
            s.commit()
        return cls(engine, run_id, seq), run, ckpt

    def write_round(self, log, checkpoint: bytes | None = None, episodes_done: int = 0) -> None:
        """Persist a :class:`market.model.RoundLog` (and a checkpoint) in one transaction."""
        t = log.transfers
        seq = np.arange(self._seq, self._seq + len(t))
        self._seq += len(t)
        with Session(self.engine) as s:
            if log.births:
                s.execute(insert(Agent), [dict(run_id=self.run_id, **b) for b in log.births])
            if len(t):
                cols = {name: t[name].tolist() for name in t.dtype.names}
                s.execute(insert(Transfer), [
                    dict(run_id=self.run_id, seq=q, src=a, dst=b, amount=m, reason=r, episode=e, step=k)
                    for q, a, b, m, r, e, k in zip(seq.tolist(), cols["src"], cols["dst"], cols["amount"],
                                                   cols["reason"], cols["episode"], cols["step"])
                ])
            if log.episodes:
                s.execute(insert(Episode), [dict(run_id=self.run_id, **e) for e in log.episodes])
            if log.deaths:  # ORM bulk update by primary key: one executemany
                s.execute(update(Agent), [dict(run_id=self.run_id, **d) for d in log.deaths])
            if checkpoint is not None:
                s.merge(Checkpoint(run_id=self.run_id, episodes_done=episodes_done, transfers=self._seq,
                                   state=checkpoint))
            s.commit()

    def finish(self, summary: dict, final_wealth: dict[int, int]) -> None:
        """Store every account's final balance (dead ones end at zero) and the summary."""
        with Session(self.engine) as s:
            s.execute(update(Agent).where(Agent.run_id == self.run_id).values(final_wealth=0))
            if final_wealth:
                s.execute(update(Agent), [dict(run_id=self.run_id, agent_id=a, final_wealth=w)
                                          for a, w in final_wealth.items()])
            run = s.get(Run, self.run_id)
            run.status, run.finished_at = "finished", datetime.now(timezone.utc)
            run.episodes, run.ledger_hash, run.summary = summary["episodes"], summary["ledger_hash"], json.dumps(summary)
            s.add(run)
            s.commit()


def load_episodes(engine, run_id: str) -> list[dict]:
    """The run's episode rows, in order, as the dicts the model produced."""
    with Session(engine) as s:
        rows = s.exec(select(Episode).where(Episode.run_id == run_id).order_by(Episode.episode)).all()
    return [r.model_dump(exclude={"run_id"}) for r in rows]


def load_transfers(engine, run_id: str) -> np.ndarray:
    """The run's transfer log, in order, as a structured array (see market.ledger)."""
    with Session(engine) as s:
        rows = s.exec(select(Transfer.src, Transfer.dst, Transfer.amount, Transfer.reason, Transfer.episode,
                             Transfer.step).where(Transfer.run_id == run_id).order_by(Transfer.seq)).all()
    return np.array([tuple(r) for r in rows], dtype=TRANSFER_DTYPE)
