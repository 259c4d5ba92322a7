"""Writing runs and reading them back: a store that writes once per round, one transaction each.

The tables, the engine and the schema versions are ``market/schema.py``; the
names callers use with the store (``Run``, ``Agent``, ..., ``make_engine``,
``StoreError``) are imported here from there.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta

import numpy as np
from sqlalchemy import delete, insert, update
from sqlalchemy import select as sa_select
from sqlmodel import Session, select

from market.checkpoint import CheckpointError, decode
from market.ledger import TRANSFER_DTYPE
from market.schema import (
    MODELS,
    Agent,
    Checkpoint,
    Episode,
    Lease,
    Run,
    StoreError,
    Transfer,
    make_engine,
    retrying,
    shown_url,
)

# ------------------------------------------------------------------ writing runs

HOST = socket.gethostname()
LEASE_STALE_S = 900  # a lease not renewed for this long is stale (every round renews it; see RunStore)


class RunStore:
    """Writes one run: a row in ``run`` at the start, a batch per round, the summary at the end.

    Each round is one transaction, its checkpoint (when given) included, so the
    database never holds half a round and a checkpoint always matches the rows
    beside it. :meth:`attach` reopens a run at its checkpoint for resuming.

    One writer per run: the store holds the run's :class:`Lease` (taken with
    the run row, or by :meth:`attach`) and every write renews it in its own
    transaction, checking its token; a store whose lease was taken over raises
    :class:`StoreError` instead of writing. A lease is live while its process
    is (same host: the pid exists) and renewed within :data:`LEASE_STALE_S`
    (a writer on another host whose round takes longer would be taken for dead).
    """

    def __init__(self, engine, run_id: str, seq: int = 0):
        self.engine, self.run_id, self._seq = engine, run_id, seq
        self._writes = 0
        self.token = uuid.uuid4().hex

    @classmethod
    def create(cls, url: str, scenario: str, seed: int, config: dict, run_id: str | None = None,
               sweep: str | None = None) -> RunStore:
        store = cls(make_engine(url), run_id or new_run_id())

        def write():
            with Session(store.engine) as s:
                s.add(Run(id=store.run_id, scenario=scenario, seed=seed, config=json.dumps(config), sweep=sweep,
                          started_at=datetime.now(UTC)))
                s.flush()
                s.add(store._lease())
                s.commit()

        retrying(write)
        return store

    @classmethod
    def attach(cls, url: str, run_id: str, take_over: bool = False) -> tuple[RunStore, Run, dict | None]:
        """Reopen a run: take its lease, decode its checkpoint, remove the rows written after it (a round
        that was cut off); all in one transaction. Returns the store, the run and the checkpoint's state
        (None: no checkpoint yet). A finished run is returned as it is, and nothing is written.

        Raises :class:`StoreError` if the database has no such run, another process writes it (its lease
        is live; ``take_over`` takes it anyway: for a caller who knows that process died), or its
        checkpoint is not one this catallax reads; nothing is written then."""
        engine = make_engine(url)
        store = cls(engine, run_id)

        def reopen():
            with Session(engine, expire_on_commit=False) as s:
                run = s.get(Run, run_id, with_for_update=True)  # two resumes at once: one waits for the other
                if run is None:
                    raise StoreError(f"run {run_id}: not found in {shown_url(url)}")
                if run.status == "finished":
                    return run, None, 0
                lease = s.get(Lease, run_id, with_for_update=True)  # waits for a round still being written
                if lease is not None and not take_over and live(lease):
                    raise StoreError(f"run {run_id} is being written by PID {lease.pid} on {lease.host} since "
                                     f"{_utc(lease.since):%Y-%m-%d %H:%M:%S} UTC (last round "
                                     f"{_utc(lease.heartbeat):%H:%M:%S} UTC)")
                ckpt = s.get(Checkpoint, run_id)
                try:
                    state = decode(ckpt.state) if ckpt else None
                except CheckpointError as err:
                    raise StoreError(f"checkpoint of run {run_id}: {err}") from None
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
                s.merge(store._lease())
                s.commit()
                return run, state, seq

        try:
            run, state, store._seq = retrying(reopen)
        except BaseException:
            engine.dispose()
            raise
        return store, run, state

    def _lease(self) -> Lease:
        now = datetime.now(UTC)
        return Lease(run_id=self.run_id, token=self.token, host=HOST, pid=os.getpid(), since=now, heartbeat=now)

    def _renew(self, s: Session) -> None:
        """First statement of every write: renew our lease, or stop if another process took it over."""
        renewed = s.execute(update(Lease).where(Lease.run_id == self.run_id, Lease.token == self.token)
                            .values(heartbeat=datetime.now(UTC)))
        if renewed.rowcount != 1:
            raise StoreError(f"run {self.run_id}: another process took it over (this one looked dead to it); "
                             "this process writes no more")

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
                self._renew(s)
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

        retrying(write)
        self._seq = end

    def finish(self, summary: dict, final_wealth: dict[int, int]) -> None:
        """Store every account's final balance (dead ones end at zero) and the summary."""

        def write():
            with Session(self.engine) as s:
                self._renew(s)
                s.execute(update(Agent).where(Agent.run_id == self.run_id).values(final_wealth=0))
                if final_wealth:
                    s.execute(update(Agent), [{"run_id": self.run_id, "agent_id": a, "final_wealth": w}
                                              for a, w in final_wealth.items()])
                run = s.get(Run, self.run_id)
                run.status, run.finished_at = "finished", datetime.now(UTC)
                run.episodes, run.ledger_hash = summary["episodes"], summary["ledger_hash"]
                run.summary = json.dumps(summary)
                s.add(run)
                s.execute(delete(Lease).where(Lease.run_id == self.run_id))
                s.commit()

        retrying(write)

    def checkpoint(self, state: bytes, episodes_done: int) -> None:
        """A checkpoint alone, at the rows written so far (an interrupted run that was between checkpoints)."""

        def write():
            with Session(self.engine) as s:
                self._renew(s)
                s.merge(Checkpoint(run_id=self.run_id, episodes_done=episodes_done, transfers=self._seq, state=state))
                s.commit()

        retrying(write)

    def release(self, status: str, summary: dict | None = None) -> None:
        """Give up the run: mark it ``failed`` (it raised) or ``interrupted`` and drop our lease; its rows up
        to the last checkpoint stay, and it can be resumed. Nothing, if another process took it over."""

        def write():
            with Session(self.engine) as s:
                mine = s.execute(delete(Lease).where(Lease.run_id == self.run_id, Lease.token == self.token))
                if mine.rowcount == 1:
                    values = {"status": status} | ({"summary": json.dumps(summary)} if summary else {})
                    s.execute(update(Run).where(Run.id == self.run_id).values(**values))
                s.commit()

        retrying(write)

    def fail(self, error: str) -> None:
        """Mark the run failed (it raised); see :meth:`release`."""
        self.release("failed", {"error": error})


def live(lease: Lease) -> bool:
    """Whether the lease's process may still be writing: renewed lately, and (on this host) its pid exists."""
    if datetime.now(UTC) - _utc(lease.heartbeat) > timedelta(seconds=LEASE_STALE_S):
        return False
    if lease.host != HOST:
        return True
    try:
        os.kill(lease.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _utc(t: datetime) -> datetime:
    """SQLite hands datetimes back without their zone; they were written in UTC."""
    return t if t.tzinfo else t.replace(tzinfo=UTC)


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

    retrying(write)
