"""Forms: sign in and out, and the admin actions (each one call on the door, which authorizes
and audits it). Every POST carries a CSRF token or is refused with 403."""

from __future__ import annotations

import secrets
from typing import Annotated

from pydantic import Field
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from studiolo._exceptions import InvalidRequest, Unauthenticated
from studiolo.core.model import Principal
from studiolo.faces.web.errors import safe_next
from studiolo.faces.web.routing import WebRouter
from studiolo.faces.web.session import (
    SESSION_COOKIE,
    SIGNIN_COOKIE,
    Session,
    Sessions,
    check_csrf,
    form_of,
    set_cookie,
)
from studiolo.faces.web.templating import render
from studiolo.service import Coordinator

__all__ = ["router"]

router = WebRouter("/ui")


def _sessions(request: Request) -> Sessions:
    sessions: Sessions = request.app.state.web_sessions
    return sessions


def _back(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


@router.get("/sign-in")
def sign_in_page(request: Request, next: Annotated[str, Field(max_length=2000)] = "/ui/") -> Response:
    nonce = secrets.token_urlsafe(32)
    response = render(request, "sign_in.html", csrf=nonce, me=None, failed=False, next=safe_next(next))
    set_cookie(request, response, SIGNIN_COOKIE, nonce, max_age=3600)
    return response


@router.post("/sign-in")
async def sign_in(request: Request, door: Coordinator) -> Response:
    form = await form_of(request)
    check_csrf(request.cookies.get(SIGNIN_COOKIE), form)
    try:
        who = door.authenticate(form.get("token", "").strip())
    except Unauthenticated:
        ctx = {"csrf": form["csrf"], "me": None, "failed": True, "next": safe_next(form.get("next", ""))}
        return render(request, "sign_in.html", 401, **ctx)
    session = _sessions(request).open(form["token"].strip(), who.id)
    response = _back(safe_next(form.get("next", "")))
    set_cookie(request, response, SESSION_COOKIE, session.id, max_age=int(_sessions(request).max_age))
    response.delete_cookie(SIGNIN_COOKIE, path="/ui")
    return response


@router.post("/sign-out")
async def sign_out(request: Request, session: Session) -> Response:
    check_csrf(session.csrf, await form_of(request))
    _sessions(request).close(session.id)
    response = _back("/ui/sign-in")
    response.delete_cookie(SESSION_COOKIE, path="/ui")
    return response


async def _checked_form(request: Request, session: Session) -> dict[str, str]:
    form = await form_of(request)
    check_csrf(session.csrf, form)
    return form


@router.post("/grants/{grant_id}/revoke")
async def revoke_grant(
    request: Request, grant_id: str, session: Session, caller: Principal, door: Coordinator
) -> Response:
    await _checked_form(request, session)
    g = door.revoke_grant(caller, grant_id)
    return _back(f"/ui/projects/{g.project_id}/rules#grants")


@router.post("/tasks/{task_id}/cancel")
async def cancel_task(
    request: Request, task_id: str, session: Session, caller: Principal, door: Coordinator
) -> Response:
    form = await _checked_form(request, session)
    door.cancel_task(caller, task_id, form.get("reason", "")[:1000])
    return _back(f"/ui/tasks/{task_id}")


@router.post("/tasks/{task_id}/reassign")
async def reassign(
    request: Request, task_id: str, session: Session, caller: Principal, door: Coordinator
) -> Response:
    form = await _checked_form(request, session)
    door.reassign(caller, task_id, form.get("principal_id", ""))
    return _back(f"/ui/tasks/{task_id}")


@router.post("/tasks/{task_id}/migrate")
async def migrate(
    request: Request, task_id: str, session: Session, caller: Principal, door: Coordinator
) -> Response:
    form = await _checked_form(request, session)
    door.migrate_task(
        caller,
        task_id,
        criteria=_criteria(form.get("criteria", "")),
        scope=_lines(form.get("scope", "")),
        policy_version=_int_or_none(form.get("policy_version", "")),
    )
    return _back(f"/ui/tasks/{task_id}")


@router.post("/delegations/{delegation_id}/review")
async def review_delegation(
    request: Request, delegation_id: str, session: Session, caller: Principal, door: Coordinator
) -> Response:
    form = await _checked_form(request, session)
    d = door.review_remote(caller, delegation_id, form.get("decision", ""), form.get("note", "")[:2000])
    return _back(f"/ui/projects/{d.project_id}/delegations")


@router.post("/projects/{project_id}/policies")
async def publish_policy(
    request: Request, project_id: str, session: Session, caller: Principal, door: Coordinator
) -> Response:
    form = await _checked_form(request, session)
    door.publish_policy(caller, project_id, form.get("text", ""))
    return _back(f"/ui/projects/{project_id}/rules")


def _lines(text: str) -> list[str] | None:
    """One entry a line; an empty field keeps the current value (None)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines or None


def _criteria(text: str) -> dict[str, str] | None:
    """`criterion = checker@version` a line."""
    lines = _lines(text)
    if lines is None:
        return None
    pairs = [line.split("=", 1) for line in lines]
    if any(len(p) != 2 for p in pairs):
        raise InvalidRequest("criteria: one `criterion = checker@version` a line")
    return {k.strip(): v.strip() for k, v in pairs}


def _int_or_none(text: str) -> int | None:
    if not text.strip():
        return None
    if not text.strip().isdigit():
        raise InvalidRequest(f"policy version must be a number, not {text[:20]!r}")
    return int(text)
