"""A page of a project's tasks in creation order reads only that page (`ix_tasks_project_created`).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_tasks_project_created", "tasks", ["project_id", "created_at", "id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_tasks_project_created", table_name="tasks")
