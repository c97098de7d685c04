"""One audit chain per project: the `chains` heads, and on PostgreSQL the `events_seq` sequence.

Events already in the ledger stay as they are, linked in the one global chain; meta
`chain_split` records the last of them. Every later event links to the previous event of its
own chain (its project, or the ledger chain for events of no project), so the first new event
of a project links to that project's last old event. See docs/concepts.md (audit chains).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "chains",
        sa.Column("chain", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("hash", sa.String(length=80), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("chain", name=op.f("pk_chains")),
    )
    conn = op.get_bind()
    last = conn.execute(sa.text("SELECT max(seq) FROM events")).scalar() or 0
    heads = conn.execute(
        sa.text(
            "SELECT coalesce(e.project_id, '') AS chain, e.seq, e.hash, e.at FROM events e"
            " JOIN (SELECT project_id, max(seq) AS seq FROM events GROUP BY project_id) h"
            " ON e.seq = h.seq"
        )
    ).all()
    if heads:
        table = sa.table("chains", sa.column("chain"), sa.column("seq"), sa.column("hash"), sa.column("at"))
        op.bulk_insert(table, [{"chain": c, "seq": s, "hash": h, "at": a} for c, s, h, a in heads])
    conn.execute(sa.text("INSERT INTO meta (key, value) VALUES ('chain_split', :v)"), {"v": str(int(last))})
    if conn.dialect.name == "postgresql":
        op.execute("CREATE SEQUENCE events_seq AS bigint")
        if last:
            conn.execute(sa.text("SELECT setval('events_seq', :n)"), {"n": int(last)})


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP SEQUENCE events_seq")
    op.execute("DELETE FROM meta WHERE key = 'chain_split'")
    op.drop_table("chains")
