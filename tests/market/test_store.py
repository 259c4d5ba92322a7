"""Runs persisted to SQLite and PostgreSQL: the transfer table alone recomputes every final balance;
determinism by seed; moving a run between databases (the schema itself: test_schema.py)."""

import hashlib
import json

import pytest
from sqlalchemy import inspect, text
from sqlmodel import Session, select

from market import replay
from market.store import Agent, Episode, Run, Transfer, load_transfers, make_engine
from scenarios.run.config import load
from scenarios.run.runner import run_experiment
from tests import pg

EPISODES = 60


def run(url, *overrides, seed=None):
    summary = run_experiment(load("relay", [f"run.episodes={EPISODES}", *overrides], seed=seed), url, progress=False)
    return summary, make_engine(url)


@pytest.fixture(scope="module", params=pg.DATABASES)
def stored(request, tmp_path_factory):
    """One churning run (rent forces bankruptcies) stored in SQLite, then in PostgreSQL."""
    return run(pg.new_database(request.param, request, tmp_path_factory.mktemp("store")), "market.rent=0.05")


def test_transfer_table_recomputes_every_final_balance(stored):
    summary, engine = stored
    with Session(engine) as s:
        rows = s.exec(select(Transfer.src, Transfer.dst, Transfer.amount).where(Transfer.run_id == summary["run_id"])).all()
        agents = s.exec(select(Agent).where(Agent.run_id == summary["run_id"])).all()
    balance: dict[int, int] = {}
    for src, dst, amount in rows:
        balance[src] = balance.get(src, 0) - amount
        balance[dst] = balance.get(dst, 0) + amount
    dead = [a for a in agents if a.died_episode is not None]
    assert dead and len(agents) - len(dead) == summary["population"]  # some died, the rest are alive
    for a in agents:
        assert a.final_wealth == balance.get(a.agent_id, 0)
    for a in dead:
        assert a.final_wealth == 0
    assert set(balance) - {a.agent_id for a in agents} == {0}  # every other account is a recorded agent
    assert balance[0] == summary["house"] == -sum(a.final_wealth for a in agents)


def test_amounts_are_stored_as_integers(stored):
    _, engine = stored
    with engine.connect() as c:
        negative = c.execute(text("SELECT count(*) FROM transfer WHERE amount <= 0")).scalar()
        if engine.dialect.name == "sqlite":  # SQLite types values, not columns
            kinds = {r[0] for r in c.execute(text("SELECT DISTINCT typeof(amount) FROM transfer"))}
            wealth = {r[0] for r in c.execute(text("SELECT DISTINCT typeof(final_wealth) FROM agent"))}
            reward = {r[0] for r in c.execute(text("SELECT DISTINCT typeof(reward) FROM episode"))}
            assert kinds == wealth == reward == {"integer"}
        else:
            columns = {(t, col["name"]): str(col["type"]) for t in ("transfer", "agent", "episode")
                       for col in inspect(c).get_columns(t)}
            assert {columns[k] for k in [("transfer", "amount"), ("agent", "final_wealth"), ("episode", "reward")]} \
                == {"BIGINT"}
    assert negative == 0


def test_run_and_episode_rows(stored):
    summary, engine = stored
    with Session(engine) as s:
        run_row = s.get(Run, summary["run_id"])
        episodes = s.exec(select(Episode.episode).where(Episode.run_id == summary["run_id"]).order_by(Episode.episode)).all()
        n_transfers = len(s.exec(select(Transfer.seq).where(Transfer.run_id == summary["run_id"])).all())
    assert episodes == list(range(EPISODES))
    assert run_row.status == "finished" and run_row.finished_at is not None
    assert run_row.episodes == summary["episodes"] == EPISODES
    assert run_row.ledger_hash == summary["ledger_hash"]
    assert json.loads(run_row.summary)["ledger_hash"] == summary["ledger_hash"]
    assert json.loads(run_row.config)["run"]["episodes"] == EPISODES
    assert n_transfers == summary["transfers"]


def test_stored_log_is_the_hashed_log(stored):
    summary, engine = stored
    log = load_transfers(engine, summary["run_id"])
    assert hashlib.sha256(log.tobytes()).hexdigest() == summary["ledger_hash"]
    assert sum(replay(log).values()) == 0


def test_same_seed_same_hash_other_seed_other_hash(db_url):
    a, _ = run(db_url, seed=1)
    b, _ = run(db_url, seed=1)
    c, _ = run(db_url, seed=2)
    assert a["ledger_hash"] == b["ledger_hash"]
    assert a["run_id"] != b["run_id"]
    assert a["ledger_hash"] != c["ledger_hash"]
    assert a["conservation_ok"] and c["conservation_ok"]


def test_two_runs_share_one_database(db_url):
    a, engine = run(db_url, seed=1)
    b, _ = run(db_url, "market.payment=final_only", seed=1)
    with Session(engine) as s:
        assert len(s.exec(select(Run)).all()) == 2
    la, lb = load_transfers(engine, a["run_id"]), load_transfers(engine, b["run_id"])
    assert la.size == a["transfers"] and lb.size == b["transfers"]
    assert hashlib.sha256(lb.tobytes()).hexdigest() == b["ledger_hash"] != a["ledger_hash"]


def test_lockstep_batch_4_conserves(db_url):
    summary, engine = run(db_url, "market.batch=4")
    assert summary["conservation_ok"] is True
    assert summary["episodes"] == EPISODES  # 60 = 15 rounds of 4
    with Session(engine) as s:
        assert len(s.exec(select(Episode.episode).where(Episode.run_id == summary["run_id"])).all()) == EPISODES


def test_a_run_moves_between_databases_whole_and_once(stored, tmp_path):
    """export_run/import_run (how sweep workers ship runs to the SQLite driver): every row, in one transaction."""
    from sqlalchemy.exc import IntegrityError

    from market.store import MODELS, export_run, import_run

    summary, engine = stored
    rows = export_run(engine, summary["run_id"])
    target = make_engine(f"sqlite:///{tmp_path / 'target.db'}")
    import_run(target, rows)
    assert export_run(target, summary["run_id"]) == rows
    assert all(rows[m.__tablename__] for m in MODELS if m.__tablename__ not in ("round_usage", "heldout_eval"))  # relay
    # calls no LLM and has no held-out set
    with pytest.raises(IntegrityError):
        import_run(target, rows)  # a second import adds nothing
    with target.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM transfer")).scalar() == summary["transfers"]
