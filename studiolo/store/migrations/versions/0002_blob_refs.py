"""Blobs readable per project (`blob_refs`), and events found by subject (the task view).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "blob_refs",
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("digest", sa.String(length=80), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_blob_refs_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("project_id", "digest", name=op.f("pk_blob_refs")),
    )
    op.create_index("ix_events_subject", "events", ["subject", "seq"], unique=False)
    _backfill()


def _backfill() -> None:
    """Every blob a project already references stays readable by that project."""
    conn = op.get_bind()
    refs: set[tuple[str, str]] = set()
    for project_id, digest in conn.execute(sa.text("SELECT project_id, digest FROM artifact_revisions")):
        if digest:
            refs.add((project_id, digest))
    for project_id, manifest in conn.execute(sa.text("SELECT project_id, manifest FROM candidates")):
        refs.update((project_id, d) for d in json.loads(manifest)["files"].values() if d)
    for project_id, body in conn.execute(sa.text("SELECT project_id, body FROM receipts")):
        log = json.loads(body).get("log_digest")
        if log:
            refs.add((project_id, log))
    if refs:
        table = sa.table("blob_refs", sa.column("project_id"), sa.column("digest"))
        op.bulk_insert(table, [{"project_id": p, "digest": d} for p, d in sorted(refs)])


def downgrade() -> None:
    op.drop_index("ix_events_subject", table_name="events")
    op.drop_table("blob_refs")
