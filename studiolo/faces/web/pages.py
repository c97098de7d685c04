"""The dashboard's pages. Each: the session's principal → one or two reads on the door →
a template. What a page shows is exactly what the door lets that principal read."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from studiolo._exceptions import NotFound
from studiolo.core.model import Principal
from studiolo.faces.web.present import candidate_diffs, receipt_json
from studiolo.faces.web.refusals import refusal
from studiolo.faces.web.routing import WebRouter
from studiolo.faces.web.session import Session
from studiolo.faces.web.study import chart, eval_chart, eval_rows, study_rows
from studiolo.faces.web.templating import HEADERS, render
from studiolo.service import Coordinator, TaskPage
from studiolo.service.overview import Attention

__all__ = ["names_of", "router"]

router = WebRouter("/ui")
After = Annotated[int, Field(ge=0, le=2**53)]


def _base(session: Session, caller: Principal, **context: Any) -> dict[str, Any]:
    return {"me": caller, "csrf": session.csrf, **context}


@router.get("/")
def projects(request: Request, session: Session, caller: Principal, door: Coordinator) -> Response:
    ctx = _base(session, caller, summaries=door.project_summaries(caller))
    return render(request, "projects.html", **ctx)


def _task_context(door: Coordinator, caller: Principal, page: TaskPage) -> dict[str, Any]:
    v = page.view
    names = names_of(door, caller, v.task.project_id)
    refused = [refusal(e, names) for e in reversed(v.rejections)]  # the latest first
    return {
        "names": names,
        "page": page,
        "view": v,
        "project_id": v.task.project_id,
        "diffs": {c.id: candidate_diffs(door, caller, v.task.project_id, c) for c in v.candidates},
        "refused": refused,
        "blocked": refused[0] if refused and Attention.REFUSED in page.attention else None,
        "cancelled": next((e for e in reversed(page.timeline) if e.kind == "task.cancelled"), None),
        "receipt_fields": sorted(v.completion.receipt.items()) if v.completion else [],
        "receipt_json": receipt_json(v.completion) if v.completion else "",
        "last_seq": page.project_seq,  # any project event may change the page (e.g. an edit)
        "lease_key": _lease_key(page),  # and a heartbeat, which is no event
    }


def _lease_key(page: TaskPage) -> str:
    """The live attempts' lease deadlines: a heartbeat moves one without an audit event."""
    live = [a for a in page.view.attempts if a.status.value == "active"]
    return ",".join(f"{a.id}:{a.lease_deadline!r}" for a in live)


@router.get("/tasks/{task_id}")
def task(request: Request, task_id: str, session: Session, caller: Principal, door: Coordinator) -> Response:
    ctx = _base(session, caller, **_task_context(door, caller, door.task_page(caller, task_id)))
    ctx["principals"] = _principals_or_none(door, caller, ctx["project_id"])
    ctx["admin"] = door.may_administer(caller, ctx["project_id"])
    return render(request, "task.html", **ctx)


@router.get("/tasks/{task_id}/live")
def task_live(
    request: Request,
    task_id: str,
    session: Session,
    caller: Principal,
    door: Coordinator,
    after: After = 0,
    lease: Annotated[str, Field(max_length=2000)] = "",
) -> Response:
    """The live part of the task page, or 204 if nothing happened since event `after` and
    the live leases are still `lease` (the page's `lease_key`)."""
    page = door.task_page(caller, task_id)
    if page.project_seq <= after and lease == _lease_key(page):  # before reading blobs for the diffs
        return Response(status_code=204, headers=HEADERS)
    ctx = _base(session, caller, **_task_context(door, caller, page))
    return render(request, "_task_live.html", **ctx)


def _principals_or_none(door: Coordinator, caller: Principal, project_id: str) -> list[Any]:
    try:
        return list(door.principals(caller, project_id))
    except NotFound:
        return []


def names_of(door: Coordinator, caller: Principal, project_id: str) -> dict[str, str]:
    """Principal id → name, for the project's principals and the caller."""
    return {caller.id: caller.name} | {p.id: p.name for p in _principals_or_none(door, caller, project_id)}


@router.get("/projects/{project_id}/rules")
def rules(
    request: Request, project_id: str, session: Session, caller: Principal, door: Coordinator
) -> Response:
    ctx = _base(
        session,
        caller,
        project_id=project_id,
        policies=door.policies(caller, project_id),
        pins=door.policy_pins(caller, project_id),
        checkers=door.checkers(caller, project_id),
        grants=door.list_grants(caller, project_id),
        principals={p.id: p for p in _principals_or_none(door, caller, project_id)},
        admin=door.may_administer(caller, project_id),
    )
    return render(request, "rules.html", **ctx)


@router.get("/projects/{project_id}/delegations")
def delegations(
    request: Request, project_id: str, session: Session, caller: Principal, door: Coordinator
) -> Response:
    """Delegations to remote agents, and the review queue of indeterminate ones."""
    found = door.delegations_page(caller, project_id)
    queue = [d for d in found.delegations if d.state.value == "indeterminate"]
    ctx = _base(
        session,
        caller,
        project_id=project_id,
        delegations=found.delegations,
        titles=found.titles,
        orgs=found.orgs,
        queue=queue,
        admin=door.may_administer(caller, project_id),
    )
    return render(request, "delegations.html", **ctx)


@router.get("/study")
def study(request: Request, session: Session, caller: Principal) -> Response:
    rows, meta = study_rows()
    erows, emeta = eval_rows()
    ctx = _base(
        session,
        caller,
        rows=rows,
        meta=meta,
        chart=chart(rows),
        erows=erows,
        emeta=emeta,
        echart=eval_chart(erows),
    )
    return render(request, "study.html", **ctx)


@router.get("/blobs/{digest}")
def blob(digest: str, caller: Principal, door: Coordinator) -> Response:
    """A verifier's log (or any readable blob) as plain text, never rendered as HTML."""
    data = door.get_blob(caller, digest)
    headers = {**HEADERS, "Content-Security-Policy": "sandbox; default-src 'none'"}
    return Response(data, media_type="text/plain; charset=utf-8", headers=headers)


def home() -> RedirectResponse:
    return RedirectResponse("/ui/", status_code=307)
