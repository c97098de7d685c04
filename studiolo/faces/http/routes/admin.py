"""Projects, principals, tokens, grants, policies, checkers."""

from __future__ import annotations

from studiolo.api import responses as s
from studiolo.api.requests import CheckerIn, GrantIn, PolicyIn, PrincipalIn, ProjectIn, PublicKeyIn
from studiolo.core.model import Principal
from studiolo.faces.http.operation import operation
from studiolo.service import Coordinator

__all__: list[str] = []  # the functions are registered by name (`operation`)


@operation("me")
def whoami(caller: Principal) -> s.PrincipalOut:
    return s.PrincipalOut.model_validate(caller)


@operation("create_project")
def create_project(body: ProjectIn, caller: Principal, door: Coordinator) -> s.ProjectOut:
    return s.ProjectOut.model_validate(door.create_project(caller, body.name))


@operation("projects")
def list_projects(caller: Principal, door: Coordinator) -> list[s.ProjectOut]:
    return [s.ProjectOut.model_validate(p) for p in door.projects(caller)]


@operation("orientation")
def orientation(project_id: str, caller: Principal, door: Coordinator) -> s.OrientationOut:
    return s.OrientationOut.model_validate(door.orient(caller, project_id))


@operation("add_principal")
def add_principal(project_id: str, body: PrincipalIn, caller: Principal, door: Coordinator) -> s.IssuedOut:
    issued = door.add_principal(caller, project_id, body.name, body.kind, body.public_key)
    return s.IssuedOut.model_validate(issued)


@operation("principals")
def list_principals(project_id: str, caller: Principal, door: Coordinator) -> list[s.PrincipalOut]:
    return [s.PrincipalOut.model_validate(p) for p in door.principals(caller, project_id)]


@operation("rotate_token")
def rotate_token(principal_id: str, caller: Principal, door: Coordinator) -> s.IssuedOut:
    return s.IssuedOut.model_validate(door.rotate_token(caller, principal_id))


@operation("revoke_tokens")
def revoke_tokens(principal_id: str, caller: Principal, door: Coordinator) -> s.RevokedOut:
    return s.RevokedOut(revoked=door.revoke_tokens(caller, principal_id))


@operation("reconfirm")
def reconfirm(principal_id: str, caller: Principal, door: Coordinator) -> s.ReconfirmedOut:
    return s.ReconfirmedOut.model_validate(door.reconfirm(caller, principal_id))


@operation("set_public_key")
def set_public_key(
    principal_id: str, body: PublicKeyIn, caller: Principal, door: Coordinator
) -> s.PrincipalOut:
    return s.PrincipalOut.model_validate(door.set_public_key(caller, principal_id, body.public_key))


@operation("grant")
def create_grant(project_id: str, body: GrantIn, caller: Principal, door: Coordinator) -> s.GrantOut:
    g = door.grant(caller, project_id, body.principal_id, body.actions, body.scope)
    return s.GrantOut.model_validate(g)


@operation("grants")
def list_grants(project_id: str, caller: Principal, door: Coordinator) -> list[s.GrantOut]:
    return [s.GrantOut.model_validate(g) for g in door.list_grants(caller, project_id)]


@operation("revoke_grant")
def revoke_grant(grant_id: str, caller: Principal, door: Coordinator) -> s.GrantOut:
    return s.GrantOut.model_validate(door.revoke_grant(caller, grant_id))


@operation("publish_policy")
def publish_policy(project_id: str, body: PolicyIn, caller: Principal, door: Coordinator) -> s.PolicyOut:
    return s.PolicyOut.model_validate(door.publish_policy(caller, project_id, body.text))


@operation("policies")
def list_policies(project_id: str, caller: Principal, door: Coordinator) -> list[s.PolicyOut]:
    return [s.PolicyOut.model_validate(p) for p in door.policies(caller, project_id)]


@operation("register_checker")
def register_checker(project_id: str, body: CheckerIn, caller: Principal, door: Coordinator) -> s.CheckerOut:
    c = door.register_checker(
        caller, project_id, body.name, body.version, body.kind, body.config, body.verifiers
    )
    return s.CheckerOut.model_validate(c)


@operation("checkers")
def list_checkers(project_id: str, caller: Principal, door: Coordinator) -> list[s.CheckerOut]:
    return [s.CheckerOut.model_validate(c) for c in door.checkers(caller, project_id)]
