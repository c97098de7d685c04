"""Baseline: the ledger's tables as of the first release of the storage contract.

Revision ID: 0001
Revises:
Create Date: 2025-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "artifact_revisions",
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("path", sa.String(length=1100), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.Column("digest", sa.String(length=80), nullable=True),
        sa.Column("changed_at", sa.Float(), nullable=False),
        sa.Column("actor", sa.String(length=64), nullable=True),
        sa.Column("cause", sa.String(length=80), nullable=False),
        sa.PrimaryKeyConstraint("project_id", "path", "revision", name=op.f("pk_artifact_revisions")),
    )
    op.create_table(
        "blobs",
        sa.Column("digest", sa.String(length=80), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("digest", name=op.f("pk_blobs")),
    )
    op.create_table(
        "events",
        sa.Column("seq", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("project_id", sa.String(length=64), nullable=True),
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("actor", sa.String(length=64), nullable=True),
        sa.Column("subject", sa.String(length=200), nullable=True),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.Column("prev_hash", sa.String(length=80), nullable=False),
        sa.Column("hash", sa.String(length=80), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_events")),
    )
    op.create_index("ix_events_project", "events", ["project_id", "seq"], unique=False)
    op.create_table(
        "meta",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_meta")),
    )
    op.create_table(
        "projects",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_projects")),
        sa.UniqueConstraint("name", name=op.f("uq_projects_name")),
    )
    op.create_table(
        "artifacts",
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("path", sa.String(length=1100), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.Column("digest", sa.String(length=80), nullable=True),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_artifacts_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("project_id", "path", name=op.f("pk_artifacts")),
    )
    op.create_table(
        "checkers",
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("version", sa.String(length=50), nullable=False),
        sa.Column("kind", sa.String(length=50), nullable=False),
        sa.Column("config", sa.Text(), nullable=False),
        sa.Column("verifiers", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_checkers_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("project_id", "name", "version", name=op.f("pk_checkers")),
    )
    op.create_table(
        "collections",
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("prefix", sa.String(length=1100), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_collections_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("project_id", "prefix", name=op.f("pk_collections")),
    )
    op.create_table(
        "observations",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("target", sa.String(length=1100), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=True),
        sa.Column("digest", sa.String(length=80), nullable=True),
        sa.Column("kind", sa.String(length=50), nullable=False),
        sa.Column("observed_at", sa.Float(), nullable=False),
        sa.Column("observer_id", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_observations_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_observations")),
    )
    op.create_index("ix_observations_target", "observations", ["project_id", "target"], unique=False)
    op.create_table(
        "policies",
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("digest", sa.String(length=80), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_policies_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("project_id", "version", name=op.f("pk_policies")),
    )
    op.create_table(
        "principals",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("project_id", sa.String(length=64), nullable=True),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("public_key", sa.String(length=200), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_principals_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_principals")),
        sa.UniqueConstraint("project_id", "name", name="uq_principal_name"),
    )
    op.create_table(
        "tasks",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("title", sa.String(length=300), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("contract", sa.Text(), nullable=False),
        sa.Column("contract_hash", sa.String(length=80), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("current_attempt_id", sa.String(length=64), nullable=True),
        sa.Column("fence", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("completed_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], name=op.f("fk_tasks_project_id_projects")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tasks")),
    )
    op.create_index("ix_tasks_project_status", "tasks", ["project_id", "status"], unique=False)
    op.create_table(
        "attempts",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=False),
        sa.Column("principal_id", sa.String(length=64), nullable=False),
        sa.Column("fence", sa.BigInteger(), nullable=False),
        sa.Column("lease_deadline", sa.Float(), nullable=False),
        sa.Column("incarnation", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["principal_id"], ["principals.id"], name=op.f("fk_attempts_principal_id_principals")
        ),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], name=op.f("fk_attempts_task_id_tasks")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_attempts")),
        sa.UniqueConstraint("task_id", "fence", name="uq_attempt_fence"),
    )
    op.create_table(
        "completions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=False),
        sa.Column("attempt_id", sa.String(length=64), nullable=False),
        sa.Column("candidate_id", sa.String(length=64), nullable=False),
        sa.Column("request_id", sa.String(length=200), nullable=False),
        sa.Column("request_digest", sa.String(length=80), nullable=False),
        sa.Column("principal_id", sa.String(length=64), nullable=False),
        sa.Column("commit_version", sa.BigInteger(), nullable=False),
        sa.Column("receipt", sa.Text(), nullable=False),
        sa.Column("signature", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_completions_project_id_projects")
        ),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], name=op.f("fk_completions_task_id_tasks")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_completions")),
        sa.UniqueConstraint("commit_version", name=op.f("uq_completions_commit_version")),
        sa.UniqueConstraint("project_id", "request_id", name="uq_completion_request"),
        sa.UniqueConstraint("task_id", name=op.f("uq_completions_task_id")),
    )
    op.create_table(
        "grants",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("principal_id", sa.String(length=64), nullable=False),
        sa.Column("actions", sa.Text(), nullable=False),
        sa.Column("scope", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("revoked_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["principal_id"], ["principals.id"], name=op.f("fk_grants_principal_id_principals")
        ),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], name=op.f("fk_grants_project_id_projects")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_grants")),
    )
    op.create_index("ix_grants_principal", "grants", ["principal_id"], unique=False)
    op.create_table(
        "handoffs",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=False),
        sa.Column("attempt_id", sa.String(length=64), nullable=False),
        sa.Column("principal_id", sa.String(length=64), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], name=op.f("fk_handoffs_task_id_tasks")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_handoffs")),
    )
    op.create_index("ix_handoffs_task", "handoffs", ["task_id"], unique=False)
    op.create_table(
        "tokens",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("principal_id", sa.String(length=64), nullable=False),
        sa.Column("token_hash", sa.String(length=80), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("revoked_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["principal_id"], ["principals.id"], name=op.f("fk_tokens_principal_id_principals")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_tokens_token_hash")),
    )
    op.create_table(
        "candidates",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=False),
        sa.Column("attempt_id", sa.String(length=64), nullable=False),
        sa.Column("manifest", sa.Text(), nullable=False),
        sa.Column("digest", sa.String(length=80), nullable=False),
        sa.Column("dependency_digest", sa.String(length=80), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["attempt_id"], ["attempts.id"], name=op.f("fk_candidates_attempt_id_attempts")
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_candidates_project_id_projects")
        ),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], name=op.f("fk_candidates_task_id_tasks")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_candidates")),
    )
    op.create_index("ix_candidates_attempt", "candidates", ["attempt_id"], unique=False)
    op.create_table(
        "receipts",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("candidate_id", sa.String(length=64), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("signature", sa.String(length=200), nullable=False),
        sa.Column("issuer_id", sa.String(length=64), nullable=False),
        sa.Column("reused_from", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["candidate_id"], ["candidates.id"], name=op.f("fk_receipts_candidate_id_candidates")
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_receipts_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_receipts")),
    )
    op.create_index("ix_receipts_candidate", "receipts", ["candidate_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_receipts_candidate", table_name="receipts")
    op.drop_table("receipts")
    op.drop_index("ix_candidates_attempt", table_name="candidates")
    op.drop_table("candidates")
    op.drop_table("tokens")
    op.drop_index("ix_handoffs_task", table_name="handoffs")
    op.drop_table("handoffs")
    op.drop_index("ix_grants_principal", table_name="grants")
    op.drop_table("grants")
    op.drop_table("completions")
    op.drop_table("attempts")
    op.drop_index("ix_tasks_project_status", table_name="tasks")
    op.drop_table("tasks")
    op.drop_table("principals")
    op.drop_table("policies")
    op.drop_index("ix_observations_target", table_name="observations")
    op.drop_table("observations")
    op.drop_table("collections")
    op.drop_table("checkers")
    op.drop_table("artifacts")
    op.drop_table("projects")
    op.drop_table("meta")
    op.drop_index("ix_events_project", table_name="events")
    op.drop_table("events")
    op.drop_table("blobs")
    op.drop_table("artifact_revisions")
