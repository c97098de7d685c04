"""Retention of audit detail (docs/operations.md, "Retention and deletion"): a project's
`audit_detail` period, and meta `detail_split`, the last event hashed over its whole `data`.
Every later event's hash covers the digest of its `data` instead (store/audit.py), so a
retention sweep may replace an aged event's `data` by a redaction marker; events up to the
split keep the old rule and are never redacted.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("retention_policies") as batch:
        batch.add_column(sa.Column("audit_detail", sa.Float(), nullable=True))
    conn = op.get_bind()
    last = conn.execute(sa.text("SELECT max(seq) FROM events")).scalar() or 0
    conn.execute(sa.text("INSERT INTO meta (key, value) VALUES ('detail_split', :v)"), {"v": str(int(last))})


def downgrade() -> None:
    op.execute("DELETE FROM meta WHERE key = 'detail_split'")
    with op.batch_alter_table("retention_policies") as batch:
        batch.drop_column("audit_detail")
