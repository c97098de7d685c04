"""Projects, principals, tokens, grants, policies, checkers."""

from __future__ import annotations

from fastapi import APIRouter

from studiolo.api import responses as s
from studiolo.api.requests import CheckerIn, GrantIn, PolicyIn, PrincipalIn, ProjectIn, PublicKeyIn
from studiolo.faces.http.deps import Caller, Door
from studiolo.faces.http.operation import operation

__all__ = ["router"]

router = APIRouter()


@operation(router, "me")
def whoami(caller: Caller) -> s.PrincipalOut:
    return s.PrincipalOut.model_validate(caller)


@operation(router, "create_project")
def create_project(body: ProjectIn, caller: Caller, door: Door) -> s.ProjectOut:
    return s.ProjectOut.model_validate(door.create_project(caller, body.name))


@operation(router, "projects")
def list_projects(caller: Caller, door: Door) -> list[s.ProjectOut]:
    return [s.ProjectOut.model_validate(p) for p in door.projects(caller)]


@operation(router, "orientation")
def orientation(project_id: str, caller: Caller, door: Door) -> s.OrientationOut:
    return s.OrientationOut.model_validate(door.orient(caller, project_id))


@operation(router, "add_principal")
def add_principal(project_id: str, body: PrincipalIn, caller: Caller, door: Door) -> s.IssuedOut:
    issued = door.add_principal(caller, project_id, body.name, body.kind, body.public_key)
    return s.IssuedOut.model_validate(issued)


@operation(router, "principals")
def list_principals(project_id: str, caller: Caller, door: Door) -> list[s.PrincipalOut]:
    return [s.PrincipalOut.model_validate(p) for p in door.principals(caller, project_id)]


@operation(router, "rotate_token")
def rotate_token(principal_id: str, caller: Caller, door: Door) -> s.IssuedOut:
    return s.IssuedOut.model_validate(door.rotate_token(caller, principal_id))


@operation(router, "revoke_tokens")
def revoke_tokens(principal_id: str, caller: Caller, door: Door) -> s.RevokedOut:
    return s.RevokedOut(revoked=door.revoke_tokens(caller, principal_id))


@operation(router, "reconfirm")
def reconfirm(principal_id: str, caller: Caller, door: Door) -> s.ReconfirmedOut:
    return s.ReconfirmedOut.model_validate(door.reconfirm(caller, principal_id))


@operation(router, "set_public_key")
def set_public_key(principal_id: str, body: PublicKeyIn, caller: Caller, door: Door) -> s.PrincipalOut:
    return s.PrincipalOut.model_validate(door.set_public_key(caller, principal_id, body.public_key))


@operation(router, "grant")
def create_grant(project_id: str, body: GrantIn, caller: Caller, door: Door) -> s.GrantOut:
    g = door.grant(caller, project_id, body.principal_id, body.actions, body.scope)
    return s.GrantOut.model_validate(g)


@operation(router, "grants")
def list_grants(project_id: str, caller: Caller, door: Door) -> list[s.GrantOut]:
    return [s.GrantOut.model_validate(g) for g in door.list_grants(caller, project_id)]


@operation(router, "revoke_grant")
def revoke_grant(grant_id: str, caller: Caller, door: Door) -> s.GrantOut:
    return s.GrantOut.model_validate(door.revoke_grant(caller, grant_id))


@operation(router, "publish_policy")
def publish_policy(project_id: str, body: PolicyIn, caller: Caller, door: Door) -> s.PolicyOut:
    return s.PolicyOut.model_validate(door.publish_policy(caller, project_id, body.text))


@operation(router, "policies")
def list_policies(project_id: str, caller: Caller, door: Door) -> list[s.PolicyOut]:
    return [s.PolicyOut.model_validate(p) for p in door.policies(caller, project_id)]


@operation(router, "register_checker")
def register_checker(project_id: str, body: CheckerIn, caller: Caller, door: Door) -> s.CheckerOut:
    c = door.register_checker(
        caller, project_id, body.name, body.version, body.kind, body.config, body.verifiers
    )
    return s.CheckerOut.model_validate(c)


@operation(router, "checkers")
def list_checkers(project_id: str, caller: Caller, door: Door) -> list[s.CheckerOut]:
    return [s.CheckerOut.model_validate(c) for c in door.checkers(caller, project_id)]
