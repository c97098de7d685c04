"""Reads by owner that scanned a whole table: a task's candidates (and through them its
receipts, on every task view), a principal's tokens (every rotation and revocation), a
project's grants. Each grew with the ledger, not with what it returns.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_candidates_task", "candidates", ["task_id", "created_at", "id"], unique=False)
    op.create_index("ix_tokens_principal", "tokens", ["principal_id"], unique=False)
    op.create_index("ix_grants_project", "grants", ["project_id", "created_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_grants_project", table_name="grants")
    op.drop_index("ix_tokens_principal", table_name="tokens")
    op.drop_index("ix_candidates_task", table_name="candidates")
