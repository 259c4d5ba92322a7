"""Baseline: the run tables as first released (databases from before versioning hold exactly these).

Revision ID: 0001
Revises: 

"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = '0001'
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('run',
    sa.Column('id', sa.String(), nullable=False),
    sa.Column('scenario', sa.String(), nullable=False),
    sa.Column('seed', sa.Integer(), nullable=False),
    sa.Column('config', sa.String(), nullable=False),
    sa.Column('status', sa.String(), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('episodes', sa.Integer(), nullable=False),
    sa.Column('ledger_hash', sa.String(), nullable=True),
    sa.Column('summary', sa.String(), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('agent',
    sa.Column('run_id', sa.String(), nullable=False),
    sa.Column('agent_id', sa.Integer(), nullable=False),
    sa.Column('parent_id', sa.Integer(), nullable=True),
    sa.Column('born_episode', sa.Integer(), nullable=False),
    sa.Column('died_episode', sa.Integer(), nullable=True),
    sa.Column('final_wealth', sa.BigInteger(), nullable=True),
    sa.Column('skill', sa.String(), nullable=True),
    sa.ForeignKeyConstraint(['run_id'], ['run.id'], ),
    sa.PrimaryKeyConstraint('run_id', 'agent_id')
    )
    op.create_table('checkpoint',
    sa.Column('run_id', sa.String(), nullable=False),
    sa.Column('episodes_done', sa.Integer(), nullable=False),
    sa.Column('transfers', sa.Integer(), nullable=False),
    sa.Column('state', sa.LargeBinary(), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['run.id'], ),
    sa.PrimaryKeyConstraint('run_id')
    )
    op.create_table('episode',
    sa.Column('run_id', sa.String(), nullable=False),
    sa.Column('episode', sa.Integer(), nullable=False),
    sa.Column('success', sa.Boolean(), nullable=False),
    sa.Column('steps', sa.Integer(), nullable=False),
    sa.Column('reward', sa.BigInteger(), nullable=False),
    sa.Column('population', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['run.id'], ),
    sa.PrimaryKeyConstraint('run_id', 'episode')
    )
    op.create_table('transfer',
    sa.Column('run_id', sa.String(), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('src', sa.BigInteger(), nullable=False),
    sa.Column('dst', sa.BigInteger(), nullable=False),
    sa.Column('amount', sa.BigInteger(), nullable=False),
    sa.Column('reason', sa.Integer(), nullable=False),
    sa.Column('episode', sa.Integer(), nullable=False),
    sa.Column('step', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['run.id'], ),
    sa.PrimaryKeyConstraint('run_id', 'seq')
    )


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table('transfer')
    op.drop_table('episode')
    op.drop_table('checkpoint')
    op.drop_table('agent')
    op.drop_table('run')
