"""Tasks and attempts: create, list, show, cancel, migrate, claim, reassign, heartbeat,
release, handoff."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from studiolo.api import responses as s
from studiolo.api.requests import CancelIn, ClaimIn, HandoffIn, LeaseIn, MigrateIn, ReassignIn, TaskIn
from studiolo.core.model import Principal
from studiolo.faces import render
from studiolo.faces.http.operation import operation
from studiolo.service import Coordinator

__all__: list[str] = []  # the functions are registered by name (`operation`)


@operation("create_task")
def create_task(project_id: str, body: TaskIn, caller: Principal, door: Coordinator) -> s.TaskOut:
    t = door.create_task(
        caller,
        project_id,
        body.title,
        criteria=body.criteria,
        scope=body.scope,
        description=body.description,
        policy_version=body.policy_version,
        requires_deployment=body.requires_deployment,
        allow_evidence_reuse=body.allow_evidence_reuse,
        separate_verdict=body.separate_verdict,
    )
    return s.TaskOut.model_validate(t)


@operation("tasks")
def list_tasks(
    project_id: str,
    caller: Principal,
    door: Coordinator,
    status: Annotated[str | None, Field(max_length=20)] = None,
    limit: Annotated[int, Field(ge=1, le=1000)] = 200,
    offset: Annotated[int, Field(ge=0, le=2**53)] = 0,
) -> list[s.TaskSummaryOut]:
    views = door.list_task_views(caller, project_id, status, limit, offset)
    return [render.task_summary(v) for v in views]


@operation("task")
def show_task(task_id: str, caller: Principal, door: Coordinator) -> s.TaskViewOut:
    return render.task_view(door.task_view(caller, task_id))


@operation("cancel")
def cancel_task(
    task_id: str, caller: Principal, door: Coordinator, body: CancelIn | None = None
) -> s.TaskOut:
    return s.TaskOut.model_validate(door.cancel_task(caller, task_id, body.reason if body else ""))


@operation("migrate")
def migrate_task(task_id: str, body: MigrateIn, caller: Principal, door: Coordinator) -> s.TaskOut:
    t = door.migrate_task(
        caller,
        task_id,
        criteria=body.criteria,
        scope=body.scope,
        policy_version=body.policy_version,
        separate_verdict=body.separate_verdict,
    )
    return s.TaskOut.model_validate(t)


@operation("claim")
def claim(task_id: str, caller: Principal, door: Coordinator, body: ClaimIn | None = None) -> s.AttemptOut:
    return s.AttemptOut.model_validate(door.claim(caller, task_id, body.lease_seconds if body else None))


@operation("reassign")
def reassign(task_id: str, body: ReassignIn, caller: Principal, door: Coordinator) -> s.AttemptOut:
    return s.AttemptOut.model_validate(door.reassign(caller, task_id, body.principal_id, body.lease_seconds))


@operation("attempt")
def show_attempt(attempt_id: str, caller: Principal, door: Coordinator) -> s.AttemptOut:
    return s.AttemptOut.model_validate(door.attempt(caller, attempt_id))


@operation("heartbeat")
def heartbeat(
    attempt_id: str, caller: Principal, door: Coordinator, body: LeaseIn | None = None
) -> s.AttemptOut:
    return s.AttemptOut.model_validate(
        door.heartbeat(caller, attempt_id, body.lease_seconds if body else None)
    )


@operation("release")
def release(attempt_id: str, caller: Principal, door: Coordinator) -> s.AttemptOut:
    return s.AttemptOut.model_validate(door.release(caller, attempt_id))


@operation("handoff")
def leave_handoff(attempt_id: str, body: HandoffIn, caller: Principal, door: Coordinator) -> s.HandoffOut:
    h = door.handoff(
        caller, attempt_id, artifacts=body.artifacts, obligations=body.obligations, notes=body.notes
    )
    return s.HandoffOut.model_validate(h)


@operation("handoff_view")
def show_handoff(task_id: str, caller: Principal, door: Coordinator) -> s.HandoffViewOut:
    return s.HandoffViewOut.model_validate(door.handoff_view(caller, task_id))
