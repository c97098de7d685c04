"""Where the service may send requests for a remote organisation (issue 32, blind SSRF): its
origins. Organisations pinned before this have none, so nothing is sent for them until an
admin names their origins (`studiolo remote-org origins`).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("a2a_remote_orgs") as batch:
        batch.add_column(sa.Column("origins", sa.Text(), nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("a2a_remote_orgs") as batch:
        batch.drop_column("origins")
