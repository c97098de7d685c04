"""Evidence retention and deletion (docs/operations.md, "Retention and deletion"): each
project's retention periods, legal holds, tombstones of deleted bytes, and which evidence a
retention sweep has already deleted.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "retention_policies",
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("candidates", sa.Float(), nullable=True),
        sa.Column("verifier_logs", sa.Float(), nullable=True),
        sa.Column("delegations", sa.Float(), nullable=True),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.Column("updated_by", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_retention_policies_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("project_id", name=op.f("pk_retention_policies")),
    )
    op.create_table(
        "legal_holds",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("placed_by", sa.String(length=64), nullable=False),
        sa.Column("placed_at", sa.Float(), nullable=False),
        sa.Column("released_at", sa.Float(), nullable=True),
        sa.Column("released_by", sa.String(length=64), nullable=True),
        sa.Column("release_reason", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_legal_holds_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_legal_holds")),
    )
    op.create_index("ix_legal_holds_project", "legal_holds", ["project_id", "released_at"], unique=False)
    op.create_table(
        "tombstones",
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("digest", sa.String(length=80), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("paths", sa.Text(), nullable=False),
        sa.Column("subject", sa.String(length=1100), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("deleted_by", sa.String(length=64), nullable=False),
        sa.Column("deleted_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_tombstones_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("project_id", "digest", name=op.f("pk_tombstones")),
    )
    op.create_index("ix_tombstones_digest", "tombstones", ["digest"], unique=False)
    op.create_table(
        "retention_swept",
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("subject", sa.String(length=100), nullable=False),
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("swept_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("kind", "subject", name=op.f("pk_retention_swept")),
    )


def downgrade() -> None:
    op.drop_table("retention_swept")
    op.drop_index("ix_tombstones_digest", table_name="tombstones")
    op.drop_table("tombstones")
    op.drop_index("ix_legal_holds_project", table_name="legal_holds")
    op.drop_table("legal_holds")
    op.drop_table("retention_policies")
