"""Compact logs: transfers and episodes as integer rows keyed by (run number, position); views of the old names.

``transfer`` and ``episode`` held the run id string in every row and a second
index beside the table (~70 bytes per transfer). Now each run gets a small
number (``run_number``), and its rows go to ``transfer_log`` / ``episode_log``
under one integer id, (num - 1) * 10**9 + seq (or episode): on SQLite the rowid
itself, so a row is its integers alone. ``reason`` names the reason codes. The
views ``transfer`` and ``episode`` show the rows as before (``transfer`` also
with ``reason_name``), so plain SQL keeps working. The rows are copied over;
SQLite keeps the freed pages in the file until ``VACUUM``.

Revision ID: 0004
Revises: 0003
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

STRIDE = 10**9  # market.schema.LOG_STRIDE when this revision was written
REASONS = [(1, "BID"), (2, "REWARD"), (3, "RENT"), (4, "FUND"), (5, "WRITE_OFF"), (6, "FEE"), (7, "GIFT")]
LOG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # SQLite: INTEGER PRIMARY KEY is the rowid
FIRST = f"CAST(n.num - 1 AS BIGINT) * {STRIDE}"  # a run's first id (BIGINT: PostgreSQL would overflow int4)
IN_RUN = f"BETWEEN {FIRST} AND {FIRST} + {STRIDE - 1}"

TRANSFER_VIEW = f"""CREATE VIEW transfer AS
SELECT n.run_id, t.id - {FIRST} AS seq, t.src, t.dst, t.amount, t.reason, r.name AS reason_name, t.episode, t.step
FROM run_number n JOIN transfer_log t ON t.id {IN_RUN} LEFT JOIN reason r ON r.code = t.reason"""
EPISODE_VIEW = f"""CREATE VIEW episode AS
SELECT n.run_id, e.id - {FIRST} AS episode, e.success, e.steps, e.reward, e.population
FROM run_number n JOIN episode_log e ON e.id {IN_RUN}"""


def upgrade() -> None:
    reason = op.create_table("reason",
                             sa.Column("code", sa.SmallInteger(), autoincrement=False, nullable=False),
                             sa.Column("name", sa.String(), nullable=False),
                             sa.PrimaryKeyConstraint("code"), sa.UniqueConstraint("name"))
    op.bulk_insert(reason, [{"code": c, "name": n} for c, n in REASONS])
    op.create_table("run_number",
                    sa.Column("num", sa.Integer(), nullable=False),
                    sa.Column("run_id", sa.String(), nullable=False),
                    sa.ForeignKeyConstraint(["run_id"], ["run.id"]),
                    sa.PrimaryKeyConstraint("num"), sa.UniqueConstraint("run_id"))
    op.execute("INSERT INTO run_number (run_id) SELECT id FROM run ORDER BY started_at, id")
    op.create_table("transfer_log",
                    sa.Column("id", LOG_ID, autoincrement=False, nullable=False),
                    sa.Column("amount", sa.BigInteger(), nullable=False),
                    sa.Column("src", sa.Integer(), nullable=False),
                    sa.Column("dst", sa.Integer(), nullable=False),
                    sa.Column("episode", sa.Integer(), nullable=False),
                    sa.Column("step", sa.Integer(), nullable=False),
                    sa.Column("reason", sa.SmallInteger(), nullable=False),
                    sa.PrimaryKeyConstraint("id"))
    op.create_table("episode_log",
                    sa.Column("id", LOG_ID, autoincrement=False, nullable=False),
                    sa.Column("reward", sa.BigInteger(), nullable=False),
                    sa.Column("steps", sa.Integer(), nullable=False),
                    sa.Column("population", sa.Integer(), nullable=False),
                    sa.Column("success", sa.Boolean(), nullable=False),
                    sa.PrimaryKeyConstraint("id"))
    op.execute(f"INSERT INTO transfer_log (id, amount, src, dst, episode, step, reason) "
               f"SELECT {FIRST} + t.seq, t.amount, t.src, t.dst, t.episode, t.step, t.reason "
               f"FROM transfer t JOIN run_number n ON n.run_id = t.run_id ORDER BY 1")
    op.execute(f"INSERT INTO episode_log (id, reward, steps, population, success) "
               f"SELECT {FIRST} + e.episode, e.reward, e.steps, e.population, e.success "
               f"FROM episode e JOIN run_number n ON n.run_id = e.run_id ORDER BY 1")
    op.drop_table("transfer")
    op.drop_table("episode")
    op.execute(TRANSFER_VIEW)
    op.execute(EPISODE_VIEW)


def downgrade() -> None:
    op.execute("DROP VIEW transfer")
    op.execute("DROP VIEW episode")
    op.create_table("transfer",
                    sa.Column("run_id", sa.String(), nullable=False),
                    sa.Column("seq", sa.Integer(), nullable=False),
                    sa.Column("src", sa.BigInteger(), nullable=False),
                    sa.Column("dst", sa.BigInteger(), nullable=False),
                    sa.Column("amount", sa.BigInteger(), nullable=False),
                    sa.Column("reason", sa.Integer(), nullable=False),
                    sa.Column("episode", sa.Integer(), nullable=False),
                    sa.Column("step", sa.Integer(), nullable=False),
                    sa.ForeignKeyConstraint(["run_id"], ["run.id"]),
                    sa.PrimaryKeyConstraint("run_id", "seq"))
    op.create_table("episode",
                    sa.Column("run_id", sa.String(), nullable=False),
                    sa.Column("episode", sa.Integer(), nullable=False),
                    sa.Column("success", sa.Boolean(), nullable=False),
                    sa.Column("steps", sa.Integer(), nullable=False),
                    sa.Column("reward", sa.BigInteger(), nullable=False),
                    sa.Column("population", sa.Integer(), nullable=False),
                    sa.ForeignKeyConstraint(["run_id"], ["run.id"]),
                    sa.PrimaryKeyConstraint("run_id", "episode"))
    op.execute(f"INSERT INTO transfer (run_id, seq, src, dst, amount, reason, episode, step) "
               f"SELECT n.run_id, t.id - {FIRST}, t.src, t.dst, t.amount, t.reason, t.episode, t.step "
               f"FROM run_number n JOIN transfer_log t ON t.id {IN_RUN}")
    op.execute(f"INSERT INTO episode (run_id, episode, success, steps, reward, population) "
               f"SELECT n.run_id, e.id - {FIRST}, e.success, e.steps, e.reward, e.population "
               f"FROM run_number n JOIN episode_log e ON e.id {IN_RUN}")
    op.drop_table("episode_log")
    op.drop_table("transfer_log")
    op.drop_table("run_number")
    op.drop_table("reason")
