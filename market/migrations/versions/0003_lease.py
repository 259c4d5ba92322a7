"""lease: which process writes a run (host, pid, heartbeat), so a second writer is refused.

Revision ID: 0003
Revises: 0002
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table("lease",
                    sa.Column("run_id", sa.String(), nullable=False),
                    sa.Column("token", sa.String(), nullable=False),
                    sa.Column("host", sa.String(), nullable=False),
                    sa.Column("pid", sa.Integer(), nullable=False),
                    sa.Column("since", sa.DateTime(timezone=True), nullable=False),
                    sa.Column("heartbeat", sa.DateTime(timezone=True), nullable=False),
                    sa.ForeignKeyConstraint(["run_id"], ["run.id"]),
                    sa.PrimaryKeyConstraint("run_id"))


def downgrade() -> None:
    op.drop_table("lease")
