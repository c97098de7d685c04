"""The A2A requester side: trust anchors (`a2a_remote_orgs`) and delegations to remote agents
(`a2a_remote_delegations`).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "a2a_remote_orgs",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("keys", sa.Text(), nullable=False),
        sa.Column("agent_id", sa.String(length=64), nullable=False),
        sa.Column("verifier_id", sa.String(length=64), nullable=False),
        sa.Column("checker", sa.String(length=200), nullable=False),
        sa.Column("target", sa.String(length=1000), nullable=False),
        sa.Column("attest_key", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("revoked_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_a2a_remote_orgs_project_id_projects")
        ),
        sa.ForeignKeyConstraint(
            ["agent_id"], ["principals.id"], name=op.f("fk_a2a_remote_orgs_agent_id_principals")
        ),
        sa.ForeignKeyConstraint(
            ["verifier_id"], ["principals.id"], name=op.f("fk_a2a_remote_orgs_verifier_id_principals")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_a2a_remote_orgs")),
        sa.UniqueConstraint("project_id", "name", name="uq_a2a_remote_org_name"),
    )
    op.create_table(
        "a2a_remote_delegations",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=False),
        sa.Column("org_id", sa.String(length=64), nullable=False),
        sa.Column("agent_url", sa.String(length=2000), nullable=False),
        sa.Column("card_digest", sa.String(length=80), nullable=False),
        sa.Column("pinned", sa.Text(), nullable=False),
        sa.Column("attempt_id", sa.String(length=64), nullable=False),
        sa.Column("fence", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=40), nullable=False),
        sa.Column("remote_task_id", sa.String(length=200), nullable=True),
        sa.Column("remote_state", sa.String(length=40), nullable=True),
        sa.Column("since", sa.Float(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("evidence", sa.Text(), nullable=False),
        sa.Column("completion_id", sa.String(length=64), nullable=True),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_a2a_remote_delegations_project_id_projects")
        ),
        sa.ForeignKeyConstraint(
            ["task_id"], ["tasks.id"], name=op.f("fk_a2a_remote_delegations_task_id_tasks")
        ),
        sa.ForeignKeyConstraint(
            ["org_id"], ["a2a_remote_orgs.id"], name=op.f("fk_a2a_remote_delegations_org_id_a2a_remote_orgs")
        ),
        sa.ForeignKeyConstraint(
            ["attempt_id"], ["attempts.id"], name=op.f("fk_a2a_remote_delegations_attempt_id_attempts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_a2a_remote_delegations")),
    )
    op.create_index(
        "ix_a2a_remote_delegations_state", "a2a_remote_delegations", ["state", "updated_at"], unique=False
    )
    op.create_index("ix_a2a_remote_delegations_task", "a2a_remote_delegations", ["task_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_a2a_remote_delegations_task", table_name="a2a_remote_delegations")
    op.drop_index("ix_a2a_remote_delegations_state", table_name="a2a_remote_delegations")
    op.drop_table("a2a_remote_delegations")
    op.drop_table("a2a_remote_orgs")
