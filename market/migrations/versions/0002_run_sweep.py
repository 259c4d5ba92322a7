"""run.sweep: the sweep a run belongs to (``catallax sweep``), indexed.

Revision ID: 0002
Revises: 0001
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("run", schema=None) as batch_op:
        batch_op.add_column(sa.Column("sweep", sa.String(), nullable=True))
        batch_op.create_index(batch_op.f("ix_run_sweep"), ["sweep"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("run", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_run_sweep"))
        batch_op.drop_column("sweep")
