"""Retention periods, legal holds, deletion of bytes on request, sweeps."""

from __future__ import annotations

from fastapi import APIRouter

from studiolo.api import responses as s
from studiolo.api.requests import DeleteBytesIn, HoldIn, ReleaseHoldIn, RetentionIn, SweepIn
from studiolo.faces.http.deps import Caller, Door
from studiolo.faces.http.operation import operation

__all__ = ["router"]

router = APIRouter()


@operation(router, "retention")
def retention(project_id: str, caller: Caller, door: Door) -> s.RetentionOut:
    return s.RetentionOut.of(door.retention(caller, project_id))


@operation(router, "set_retention")
def set_retention(project_id: str, body: RetentionIn, caller: Caller, door: Door) -> s.RetentionPolicyOut:
    return s.RetentionPolicyOut.model_validate(door.set_retention(caller, project_id, body.periods()))


@operation(router, "place_hold")
def place_hold(project_id: str, body: HoldIn, caller: Caller, door: Door) -> s.HoldOut:
    return s.HoldOut.model_validate(door.place_hold(caller, project_id, body.task_id, body.reason))


@operation(router, "release_hold")
def release_hold(hold_id: str, body: ReleaseHoldIn, caller: Caller, door: Door) -> s.HoldOut:
    return s.HoldOut.model_validate(door.release_hold(caller, hold_id, body.reason))


@operation(router, "delete_bytes")
def delete_bytes(project_id: str, body: DeleteBytesIn, caller: Caller, door: Door) -> s.TombstoneOut:
    return s.TombstoneOut.of(door.delete_bytes(caller, project_id, body.digest, body.reason))


@operation(router, "sweep_retention")
def sweep_retention(caller: Caller, door: Door, body: SweepIn | None = None) -> list[s.SweepReportOut]:
    project_id = body.project_id if body is not None else None
    return [s.SweepReportOut.model_validate(r) for r in door.sweep_retention(caller, project_id)]
