"""Compute charges: the ``COMPUTE`` reason code and each agent's LLM token count.

LLM agents pay the house for the tokens their model calls use (``market.token_price``, reason
``COMPUTE``); ``agent.tokens`` is the count an agent had used when it died or the run finished
(0 for agents that call no model; NULL in runs written before this revision).

Revision ID: 0005
Revises: 0004
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("INSERT INTO reason (code, name) VALUES (8, 'COMPUTE')")
    with op.batch_alter_table("agent") as batch:
        batch.add_column(sa.Column("tokens", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agent") as batch:
        batch.drop_column("tokens")
    op.execute("DELETE FROM reason WHERE code = 8")
