"""Intake templates and delegations (the A2A face)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Row, insert, select

from studiolo.core.intake import Delegation, IntakeTemplate
from studiolo.store import schema as s
from studiolo.store._json import dumps, loads

__all__ = ["A2ARepo"]


class A2ARepo:
    def __init__(self, conn: Connection) -> None:
        self._c = conn

    # intake templates -------------------------------------------------------
    def put_intake(self, t: IntakeTemplate) -> None:
        """Insert or replace the template `(project_id, name)` (tasks pin their own contract)."""
        table = s.a2a_intakes
        self._c.execute(table.delete().where(table.c.project_id == t.project_id, table.c.name == t.name))
        self._c.execute(
            insert(table).values(
                project_id=t.project_id,
                name=t.name,
                description=t.description,
                contract=dumps(t.contract_json()),
                created_at=t.created_at,
            )
        )

    def intake(self, project_id: str, name: str) -> IntakeTemplate | None:
        table = s.a2a_intakes
        q = select(table).where(table.c.project_id == project_id, table.c.name == name)
        row = self._c.execute(q).first()
        return _intake(row) if row else None

    def intakes(self, project_id: str | None = None) -> list[IntakeTemplate]:
        table = s.a2a_intakes
        q = select(table).order_by(table.c.project_id, table.c.name)
        if project_id is not None:
            q = q.where(table.c.project_id == project_id)
        return [_intake(r) for r in self._c.execute(q)]

    # delegations -------------------------------------------------------------
    def add_delegation(self, d: Delegation) -> None:
        self._c.execute(
            insert(s.a2a_tasks).values(
                id=d.id,
                project_id=d.project_id,
                requester_id=d.requester_id,
                context_id=d.context_id,
                intake=d.intake,
                task_id=d.task_id,
                refused=d.refused,
                message=dumps(d.message),
                created_at=d.created_at,
            )
        )

    def delegation(self, a2a_id: str) -> Delegation | None:
        row = self._c.execute(select(s.a2a_tasks).where(s.a2a_tasks.c.id == a2a_id)).first()
        return _delegation(row) if row else None

    def delegations_of(self, requester_id: str, limit: int, offset: int = 0) -> list[Delegation]:
        t = s.a2a_tasks
        q = (
            select(t)
            .where(t.c.requester_id == requester_id)
            .order_by(t.c.created_at.desc(), t.c.id)
            .limit(limit)
            .offset(offset)
        )
        return [_delegation(r) for r in self._c.execute(q)]


def _intake(row: Row[Any]) -> IntakeTemplate:
    c = loads(row.contract)
    return IntakeTemplate(
        row.project_id,
        row.name,
        row.description,
        dict(c["criteria"]),
        tuple(c["scope"]),
        c["policy_version"],
        row.created_at,
    )


def _delegation(row: Row[Any]) -> Delegation:
    return Delegation(
        row.id,
        row.project_id,
        row.requester_id,
        row.context_id,
        row.intake,
        row.task_id,
        row.refused,
        loads(row.message),
        row.created_at,
    )
