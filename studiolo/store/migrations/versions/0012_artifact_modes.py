"""An artifact revision gains a mode, git's regular (100644) or executable (100755) file:
a project backed by a git repository keeps its executable bits (docs/git.md). Every
revision written before was regular.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table in ("artifacts", "artifact_revisions"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("mode", sa.String(16), nullable=False, server_default="regular"))


def downgrade() -> None:
    for table in ("artifact_revisions", "artifacts"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("mode")
