"""A candidate gains a mode per written path: git's executable bit (100755) travels with the
bytes, the candidate digest binds it, and the completion gives it to the artifact revision
(docs/git.md, "Modes"). `modes` is JSON, written path → mode, executable paths only; every
candidate written before was all regular (`{}`), and keeps its digest.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("candidates") as batch:
        batch.add_column(sa.Column("modes", sa.Text(), nullable=False, server_default="{}"))


def downgrade() -> None:
    with op.batch_alter_table("candidates") as batch:
        batch.drop_column("modes")
