"""round_usage: each round's LLM tokens and engine time, per engine, so a resumed run reports the whole run's.

Before this revision the summary's ``llm_tokens`` and ``backend_seconds`` were the engine's counters in the
process that finished the run: a resumed run counted only its own part. Runs written before it have no rows
(their usage is unknown).

Revision ID: 0006
Revises: 0005
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table("round_usage",
                    sa.Column("run_id", sa.String(), nullable=False),
                    sa.Column("episode", sa.Integer(), nullable=False),
                    sa.Column("backend", sa.String(), nullable=False),
                    sa.Column("prompt_tokens", sa.BigInteger(), nullable=False),
                    sa.Column("completion_tokens", sa.BigInteger(), nullable=False),
                    sa.Column("seconds", sa.Float(), nullable=False),
                    sa.ForeignKeyConstraint(["run_id"], ["run.id"]),
                    sa.PrimaryKeyConstraint("run_id", "episode", "backend"))


def downgrade() -> None:
    op.drop_table("round_usage")
