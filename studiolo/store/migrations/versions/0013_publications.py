"""The publication log: one row per change to a project's artifacts, written in the change's
own transaction, that projections such as the git repository replay (docs/git.md). A
project that had artifacts before gets one row that publishes them all at once, at the
head of its audit chain, so its projection starts from what it holds.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-04
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "publications",
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("actor", sa.String(length=64), nullable=True),
        sa.Column("at", sa.Float(), nullable=False),
        sa.Column("changes", sa.Text(), nullable=False),
        sa.Column("meta", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_publications_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("project_id", "version", name=op.f("pk_publications")),
    )
    _baseline(op.get_bind())


def _baseline(conn: sa.Connection) -> None:
    """Each project's live artifacts as one publication at its chain head."""
    heads = conn.execute(
        sa.text(
            "SELECT project_id, seq, at FROM events e WHERE seq = (SELECT MAX(seq)"
            " FROM events f WHERE f.project_id = e.project_id) AND project_id IS NOT NULL"
        )
    )
    for project_id, seq, at in heads.all():
        rows = conn.execute(
            sa.text("SELECT path, digest, mode FROM artifacts WHERE project_id = :p AND digest IS NOT NULL"),
            {"p": project_id},
        )
        changes = {path: [digest, mode] for path, digest, mode in rows}
        if not changes:
            continue
        conn.execute(
            sa.text(
                "INSERT INTO publications (project_id, version, kind, actor, at, changes, meta)"
                " VALUES (:p, :v, 'baseline', NULL, :at, :c, :m)"
            ),
            {
                "p": project_id,
                "v": seq,
                "at": at,
                "c": json.dumps(changes, sort_keys=True),
                "m": json.dumps({"title": "The project's artifacts before its publication log"}),
            },
        )


def downgrade() -> None:
    op.drop_table("publications")
