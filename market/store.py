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
from sqlalchemy import BigInteger, Column, event, insert, update
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


def make_engine(url: str):
    """An engine with the tables created; SQLite files get WAL and foreign keys."""
    engine = create_engine(url)
    if engine.dialect.name == "sqlite":

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(conn, _record):
            cur = conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

    SQLModel.metadata.create_all(engine)
    return engine


class RunStore:
    """Writes one run: a row in ``run`` at the start, a batch per round, the summary at the end."""

    def __init__(self, url: str, scenario: str, seed: int, config: dict):
        self.engine = make_engine(url)
        self.run_id = uuid.uuid4().hex[:12]
        self._seq = 0
        with Session(self.engine) as s:
            s.add(Run(id=self.run_id, scenario=scenario, seed=seed, config=json.dumps(config),
                      started_at=datetime.now(timezone.utc)))
            s.commit()

    def write_round(self, log) -> None:
        """Persist a :class:`market.model.RoundLog` in one transaction."""
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


def load_transfers(engine, run_id: str) -> np.ndarray:
    """The run's transfer log, in order, as a structured array (see market.ledger)."""
    with Session(engine) as s:
        rows = s.exec(select(Transfer.src, Transfer.dst, Transfer.amount, Transfer.reason, Transfer.episode,
                             Transfer.step).where(Transfer.run_id == run_id).order_by(Transfer.seq)).all()
    return np.array([tuple(r) for r in rows], dtype=TRANSFER_DTYPE)
