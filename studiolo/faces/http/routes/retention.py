"""Retention periods, legal holds, deletion of bytes on request, sweeps."""

from __future__ import annotations

from studiolo.api import responses as s
from studiolo.api.requests import DeleteBytesIn, HoldIn, ReleaseHoldIn, RetentionIn, SweepIn
from studiolo.core.model import Principal
from studiolo.faces.http.operation import operation
from studiolo.service import Coordinator

__all__: list[str] = []  # the functions are registered by name (`operation`)


@operation("retention")
def retention(project_id: str, caller: Principal, door: Coordinator) -> s.RetentionOut:
    return s.RetentionOut.of(door.retention(caller, project_id))


@operation("set_retention")
def set_retention(
    project_id: str, body: RetentionIn, caller: Principal, door: Coordinator
) -> s.RetentionPolicyOut:
    return s.RetentionPolicyOut.model_validate(door.set_retention(caller, project_id, body.periods()))


@operation("place_hold")
def place_hold(project_id: str, body: HoldIn, caller: Principal, door: Coordinator) -> s.HoldOut:
    return s.HoldOut.model_validate(door.place_hold(caller, project_id, body.task_id, body.reason))


@operation("release_hold")
def release_hold(hold_id: str, body: ReleaseHoldIn, caller: Principal, door: Coordinator) -> s.HoldOut:
    return s.HoldOut.model_validate(door.release_hold(caller, hold_id, body.reason))


@operation("delete_bytes")
def delete_bytes(
    project_id: str, body: DeleteBytesIn, caller: Principal, door: Coordinator
) -> s.TombstoneOut:
    return s.TombstoneOut.of(door.delete_bytes(caller, project_id, body.digest, body.reason))


@operation("sweep_retention")
def sweep_retention(
    caller: Principal, door: Coordinator, body: SweepIn | None = None
) -> list[s.SweepReportOut]:
    project_id = body.project_id if body is not None else None
    return [s.SweepReportOut.model_validate(r) for r in door.sweep_retention(caller, project_id)]
