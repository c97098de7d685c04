"""Delegating to remote A2A agents (docs/a2a.md, "Delegating to a remote agent"): trust
anchors, delegations, and the operator review queue."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from starlette.requests import Request

from studiolo.api import responses as s
from studiolo.api.requests import DelegateIn, OriginsIn, RemoteOrgIn, ReviewIn
from studiolo.core.model import Principal
from studiolo.faces.http.operation import operation
from studiolo.service import Coordinator
from studiolo.workers.a2a.requester import delegate

__all__: list[str] = []  # the functions are registered by name (`operation`)


@operation("add_remote_org")
def add_remote_org(
    project_id: str, body: RemoteOrgIn, caller: Principal, door: Coordinator
) -> s.RemoteOrgOut:
    org = door.add_remote_org(caller, project_id, body.name, body.keys, body.target, body.origins)
    return s.RemoteOrgOut.model_validate(org)


@operation("set_remote_origins")
def set_origins(
    project_id: str, name: str, body: OriginsIn, caller: Principal, door: Coordinator
) -> s.RemoteOrgOut:
    return s.RemoteOrgOut.model_validate(door.set_remote_origins(caller, project_id, name, body.origins))


@operation("remote_orgs")
def remote_orgs(project_id: str, caller: Principal, door: Coordinator) -> list[s.RemoteOrgOut]:
    return [s.RemoteOrgOut.model_validate(o) for o in door.remote_orgs(caller, project_id)]


@operation("revoke_remote_org")
def revoke_remote_org(project_id: str, name: str, caller: Principal, door: Coordinator) -> s.RemoteOrgOut:
    return s.RemoteOrgOut.model_validate(door.revoke_remote_org(caller, project_id, name))


@operation("delegate")
async def delegate_task(
    task_id: str, body: DelegateIn, caller: Principal, door: Coordinator, request: Request
) -> s.DelegationOut:
    """Async: the remote card is fetched on the event loop under a total deadline, so slow
    remotes hold no thread of the pool every other request needs (the door calls use it)."""
    settings = request.app.state.settings
    d = await delegate(door, caller, task_id, body.org, body.agent_url, skill=body.skill, settings=settings)
    requester = getattr(request.app.state, "requester", None)
    if requester is not None:
        requester.kick()
    return s.DelegationOut.model_validate(d)


@operation("delegation")
def show_delegation(delegation_id: str, caller: Principal, door: Coordinator) -> s.DelegationOut:
    return s.DelegationOut.model_validate(door.remote_delegation(caller, delegation_id))


@operation("delegations")
def delegations(
    project_id: str,
    caller: Principal,
    door: Coordinator,
    state: Annotated[str | None, Field(max_length=40)] = None,
) -> list[s.DelegationOut]:
    return [s.DelegationOut.model_validate(d) for d in door.remote_delegations(caller, project_id, state)]


@operation("review_queue")
def review_queue(project_id: str, caller: Principal, door: Coordinator) -> list[s.DelegationOut]:
    return [s.DelegationOut.model_validate(d) for d in door.remote_review_queue(caller, project_id)]


@operation("review")
def review(delegation_id: str, body: ReviewIn, caller: Principal, door: Coordinator) -> s.DelegationOut:
    d = door.review_remote(caller, delegation_id, body.decision, body.note)
    return s.DelegationOut.model_validate(d)
