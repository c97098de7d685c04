"""The A2A face: intake templates (`a2a_intakes`) and delegated tasks (`a2a_tasks`).

Revision ID: 0004
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "a2a_intakes",
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("contract", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_a2a_intakes_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("project_id", "name", name=op.f("pk_a2a_intakes")),
    )
    op.create_table(
        "a2a_tasks",
        sa.Column("id", sa.String(length=100), nullable=False),
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("requester_id", sa.String(length=64), nullable=False),
        sa.Column("context_id", sa.String(length=100), nullable=False),
        sa.Column("intake", sa.String(length=100), nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=True),
        sa.Column("refused", sa.Text(), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_a2a_tasks_project_id_projects")
        ),
        sa.ForeignKeyConstraint(
            ["requester_id"], ["principals.id"], name=op.f("fk_a2a_tasks_requester_id_principals")
        ),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], name=op.f("fk_a2a_tasks_task_id_tasks")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_a2a_tasks")),
    )
    op.create_index("ix_a2a_tasks_requester", "a2a_tasks", ["requester_id", "created_at"], unique=False)
    op.create_index("ix_a2a_tasks_task", "a2a_tasks", ["task_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_a2a_tasks_task", table_name="a2a_tasks")
    op.drop_index("ix_a2a_tasks_requester", table_name="a2a_tasks")
    op.drop_table("a2a_tasks")
    op.drop_table("a2a_intakes")
