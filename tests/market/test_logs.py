"""The compact logs (market/schema.py): a transfer costs <= 25 bytes in SQLite, plain SQL still audits the money
through the ``transfer`` view, and migration 0004 converts a database of the old layout, on SQLite and PostgreSQL,
to the same ledger (and back)."""

import hashlib
import sqlite3
from contextlib import closing

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import MetaData, text
from sqlmodel import create_engine

from market import replay
from market.ledger import Reason
from market.schema import MIGRATIONS
from market.store import export_run, load_episodes, load_transfers, make_engine, stored_balances
from scenarios.run.config import load
from scenarios.run.runner import run_experiment
from tests import pg


@pytest.fixture(scope="module", params=pg.DATABASES)
def stored(request, tmp_path_factory):
    """A churning relay run (rent, bankruptcies, births) stored in SQLite, then in PostgreSQL."""
    url = pg.new_database(request.param, request, tmp_path_factory.mktemp("logs"))
    summary = run_experiment(load("relay", ["run.episodes=300", "market.rent=0.05"]), url, progress=False)
    return summary, url


def alembic(conn) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = conn
    return cfg


def test_a_transfer_costs_at_most_25_bytes_in_sqlite_and_no_page_is_left_free(stored):
    summary, url = stored
    if not url.startswith("sqlite"):
        pytest.skip("the byte budget is SQLite's (PostgreSQL adds a 24-byte header to every row)")
    with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as db:
        (size,), = db.execute("SELECT sum(pgsize) FROM dbstat WHERE name = 'transfer_log'")
        indexes = db.execute("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name LIKE '%_log'").fetchall()
        (free,), = db.execute("PRAGMA freelist_count")
    assert summary["transfers"] > 4000 and size / summary["transfers"] <= 25
    assert indexes == []  # the id is the rowid: no second copy of the key
    assert free == 0  # the checkpoints replaced round by round left no free pages behind in the finished file


def test_plain_sql_audits_the_money_through_the_transfer_view(stored):
    """What a user without catallax can do: net every account from ``transfer``, reasons by name."""
    summary, url = stored
    engine = make_engine(url)
    with engine.connect() as c:
        net = dict(c.execute(text("SELECT account, sum(delta) FROM (SELECT dst AS account, amount AS delta "
                                  "FROM transfer UNION ALL SELECT src, -amount FROM transfer) AS moves "
                                  "GROUP BY account")).all())
        wealth = dict(c.execute(text("SELECT agent_id, final_wealth FROM agent")).all())
        reasons = dict(c.execute(text("SELECT reason_name, count(*) FROM transfer GROUP BY reason_name")).all())
        seq = [r[0] for r in c.execute(text("SELECT seq FROM transfer ORDER BY seq"))]
    engine.dispose()
    assert all(net.get(agent, 0) == w for agent, w in wealth.items()) and set(net) - set(wealth) == {0}
    assert net[0] == summary["house"]
    assert set(reasons) <= {r.name for r in Reason} and {"BID", "RENT", "FUND", "WRITE_OFF"} <= set(reasons)
    assert sum(reasons.values()) == summary["transfers"] and seq == list(range(summary["transfers"]))


def test_the_database_nets_the_stored_log_as_a_replay_of_it_does(stored):
    """``stored_balances`` (the run summary's conservation check) sums in SQL what ``replay`` sums in numpy."""
    summary, url = stored
    engine = make_engine(url)
    balances = stored_balances(engine, summary["run_id"])
    assert balances == replay(load_transfers(engine, summary["run_id"]))
    assert len(balances) > 20 and balances[0] == summary["house"] and summary["conservation_ok"]
    engine.dispose()


def test_the_reason_table_names_every_reason(db_url):
    """A new ``market.ledger.Reason`` needs a migration that adds its name (else the view shows NULL)."""
    engine = make_engine(db_url)
    with engine.connect() as c:
        assert dict(c.execute(text("SELECT code, name FROM reason")).all()) == {r.value: r.name for r in Reason}
    engine.dispose()


def test_migration_0004_converts_an_old_database_to_the_same_ledger_and_back(stored, request, tmp_path):
    """A database of the 0003 layout (``transfer``/``episode`` tables keyed by run id) holding two runs opens
    upgraded: the same rows, the same ledger hash, every balance replayed; downgrading restores the old tables."""
    summary, url = stored
    engine = make_engine(url)
    rows = export_run(engine, summary["run_id"])
    episodes = load_episodes(engine, summary["run_id"])
    engine.dispose()
    second = {k: [dict(r, **{("id" if k == "run" else "run_id"): "second"}) for r in v] for k, v in rows.items()}

    old_url = pg.new_database("postgres" if url.startswith("postgres") else "sqlite", request, tmp_path)
    old = create_engine(old_url)
    with old.begin() as conn:
        command.upgrade(alembic(conn), "0003")
        tables = MetaData()
        tables.reflect(conn)
        for run in (rows, second):
            for name in ("run", "agent", "transfer", "episode", "checkpoint"):
                columns = tables.tables[name].columns.keys()
                conn.execute(tables.tables[name].insert(), [{c: r[c] for c in columns} for r in run[name]])

    engine = make_engine(old_url)  # upgrades to the newest revision
    for run in (rows, second):
        run_id = run["run"][0]["id"]
        log = load_transfers(engine, run_id)
        assert export_run(engine, run_id) == {**run, "agent": [dict(a, tokens=None) for a in run["agent"]]}  # 0005: unknown
        assert hashlib.sha256(log.tobytes()).hexdigest() == summary["ledger_hash"]
        balances = replay(log)
        assert all(balances.get(a["agent_id"], 0) == a["final_wealth"] for a in run["agent"])
        assert load_episodes(engine, run_id) == episodes
    engine.dispose()

    with old.begin() as conn:
        command.downgrade(alembic(conn), "0003")
        back = conn.execute(text("SELECT run_id, seq, src, dst, amount, reason, episode, step FROM transfer "
                                 "ORDER BY run_id, seq")).mappings().all()
    old.dispose()
    before = sorted(({k: v for k, v in r.items() if k != "reason_name"} for r in rows["transfer"] + second["transfer"]),
                    key=lambda r: (r["run_id"], r["seq"]))
    assert [dict(r) for r in back] == before
