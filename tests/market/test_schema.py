"""The schema version and its migrations (market/schema.py, market/migrate.py), on SQLite and PostgreSQL: the migrations build
exactly the tables the code writes, an unversioned database is stamped, a newer or foreign one is refused."""

import pytest
from sqlalchemy import text
from sqlmodel import create_engine

from market.ledger import Reason
from market.database import make_engine
from market.migrate import head
from market.schema import MIGRATIONS, SCHEMA, TABLES, StoreError
from tests.pg import new_database


def migrated(url: str, revision: str = "head", then: list[str] | None = None):
    """An engine on ``url`` after alembic's own upgrade to ``revision`` (every migration up to it run), and
    ``then`` (SQL) in the same transaction."""
    from alembic import command
    from alembic.config import Config

    engine = create_engine(url)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
        for statement in then or []:
            conn.execute(text(statement))
    return engine


def schema_of(engine) -> dict:
    """What a database holds that the code relies on: revision, tables against the classes, views, reasons."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from sqlalchemy import inspect
    from sqlmodel import SQLModel

    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"include_object": lambda obj, name, type_, *_: (
            (obj if type_ == "table" else obj.table).name in TABLES)})
        views = {name: " ".join(inspect(conn).get_view_definition(name).split()) for name in ("transfer", "episode")}
        return {"revision": context.get_current_revision(), "diff": compare_metadata(context, SQLModel.metadata),
                "tables": sorted(inspect(conn).get_table_names()), "views": views,
                "reasons": conn.execute(text("SELECT code, name FROM reason ORDER BY code")).all()}


def test_migrations_and_a_fresh_database_build_exactly_the_tables_the_code_writes(db_url, tmp_path, request):
    """A change to a table class without its alembic revision fails here (write the revision: market/migrations).
    make_engine gives an empty database the current schema without alembic (market.migrate.create_current):
    the same revision, tables, views and reason names as running every migration."""
    fresh = schema_of(make_engine(db_url))
    (tmp_path / "migrated").mkdir()
    upgraded = schema_of(migrated(new_database("sqlite" if db_url.startswith("sqlite") else "postgres",
                                               request, tmp_path / "migrated")))
    assert fresh["revision"] == head() == SCHEMA and fresh["diff"] == [] and upgraded["diff"] == []
    assert fresh == upgraded
    assert [name for _, name in fresh["reasons"]] == [r.name for r in Reason]


def test_a_database_from_before_versioning_is_stamped_and_upgraded(tmp_path):
    """The baseline tables with a run in them, no alembic_version: opened, upgraded, the run kept."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    migrated(url, "0001", then=["DROP TABLE alembic_version",
                                "INSERT INTO run (id, scenario, seed, config, status, started_at, episodes) "
                                "VALUES ('old', 'relay', 0, '{}', 'finished', '2026-01-01 00:00:00', 5)"]).dispose()
    engine = make_engine(url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == head()
        assert conn.execute(text("SELECT id, sweep FROM run")).all() == [("old", None)]


def test_a_newer_or_foreign_schema_is_refused_and_left_alone(db_url):
    make_engine(db_url).dispose()
    engine = create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999_from_the_future'"))
    with pytest.raises(StoreError, match="schema revision '9999_from_the_future' is unknown"):
        make_engine(db_url)
    with engine.connect() as conn:  # nothing was changed
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == "9999_from_the_future"


def test_an_unversioned_database_with_other_tables_is_refused(tmp_path):
    url = f"sqlite:///{tmp_path / 'foreign.db'}"
    with create_engine(url).begin() as conn:
        conn.execute(text("CREATE TABLE run (id TEXT PRIMARY KEY, owner TEXT)"))
    with pytest.raises(StoreError, match="incompatible schema .*'run'"):
        make_engine(url)
