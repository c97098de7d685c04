"""Authority a restore could not vouch for is held until reconfirmed (docs/operations.md,
"Backup and restore"): `tokens.held_at`, and the table `held_admissions`.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.add_column(sa.Column("held_at", sa.Float(), nullable=True))
    op.create_table(
        "held_admissions",
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("checker", sa.String(length=200), nullable=False),
        sa.Column("verifier_id", sa.String(length=64), nullable=False),
        sa.Column("held_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_held_admissions_project_id_projects")
        ),
        sa.ForeignKeyConstraint(
            ["verifier_id"], ["principals.id"], name=op.f("fk_held_admissions_verifier_id_principals")
        ),
        sa.PrimaryKeyConstraint("project_id", "checker", "verifier_id", name=op.f("pk_held_admissions")),
    )
    op.create_index("ix_held_admissions_verifier", "held_admissions", ["verifier_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_held_admissions_verifier", table_name="held_admissions")
    op.drop_table("held_admissions")
    with op.batch_alter_table("tokens") as batch:
        batch.drop_column("held_at")
