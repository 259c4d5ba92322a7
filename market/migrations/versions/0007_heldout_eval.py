"""heldout_eval: a run's learning curve, the frozen market's held-out success every ``run.eval_every`` rounds.

Runs written before this revision have no rows (they measured held-out success at their end only, in the
summary).

Revision ID: 0007
Revises: 0006
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table("heldout_eval",
                    sa.Column("run_id", sa.String(), nullable=False),
                    sa.Column("episode", sa.Integer(), nullable=False),
                    sa.Column("round", sa.Integer(), nullable=False),
                    sa.Column("success", sa.Float(), nullable=False),
                    sa.Column("reward", sa.Float(), nullable=False),
                    sa.Column("problems", sa.Integer(), nullable=False),
                    sa.Column("seconds", sa.Float(), nullable=False),
                    sa.Column("fingerprint", sa.String(), nullable=False),
                    sa.ForeignKeyConstraint(["run_id"], ["run.id"]),
                    sa.PrimaryKeyConstraint("run_id", "episode"))


def downgrade() -> None:
    op.drop_table("heldout_eval")
