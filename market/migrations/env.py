"""Alembic environment for the run tables (``market.schema.TABLES``).

``market.database.make_engine`` runs the migrations (market/migrate.py) itself, on a connection that
already holds the schema lock (see ``migrate``); the alembic command line
works too, for writing the next revision from the SQLModel classes::

    alembic -c market/migrations/alembic.ini -x db=sqlite:///runs/catallax.db upgrade head
    alembic -c market/migrations/alembic.ini -x db=sqlite:///runs/catallax.db revision --autogenerate -m "what changed"

Only the run tables are versioned here; tables other packages create on the
same database (the skill library's) are left out of the comparison.
"""

from alembic import context
from sqlalchemy import create_engine
from sqlmodel import SQLModel

from market.schema import TABLES


def include_object(obj, name, type_, reflected, compare_to):
    table = obj if type_ == "table" else getattr(obj, "table", None)
    return table is None or table.name in TABLES


def run(connection) -> None:
    context.configure(connection=connection, target_metadata=SQLModel.metadata, include_object=include_object,
                      render_as_batch=connection.dialect.name == "sqlite")  # SQLite alters tables by copy-and-move
    with context.begin_transaction():
        context.run_migrations()


connection = context.config.attributes.get("connection")
if connection is not None:
    run(connection)
else:
    with create_engine(context.get_x_argument(as_dictionary=True)["db"]).begin() as conn:
        run(conn)
