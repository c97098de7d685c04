"""The dashboard's pages. Each: the session's principal → one or two reads on the door →
a template. What a page shows is exactly what the door lets that principal read."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import RedirectResponse

from studiolo._exceptions import NotFound
from studiolo.core.facts import Fact
from studiolo.core.model import TaskStatus
from studiolo.faces.http.deps import Door
from studiolo.faces.web.errors import WebRoute
from studiolo.faces.web.present import candidate_diffs, receipt_json
from studiolo.faces.web.reasons import explain
from studiolo.faces.web.session import WebCaller, WebSession
from studiolo.faces.web.study import chart, study_rows
from studiolo.faces.web.templating import HEADERS, render
from studiolo.service import TaskPage

__all__ = ["PAGE_SIZE", "router"]

router = APIRouter(prefix="/ui", route_class=WebRoute, include_in_schema=False)
PAGE_SIZE = 20
Offset = Annotated[int, Query(ge=0, le=10**9)]
Choice = Annotated[str, Query(max_length=30)]
After = Annotated[int, Query(ge=0, le=2**53)]


def _base(session: WebSession, caller: WebCaller, **context: Any) -> dict[str, Any]:
    return {"me": caller, "csrf": session.csrf, **context}


@router.get("/")
def projects(request: Request, session: WebSession, caller: WebCaller, door: Door) -> Response:
    ctx = _base(session, caller, projects=door.projects(caller))
    return render(request, "projects.html", **ctx)


@router.get("/projects/{project_id}")
def tasks(
    request: Request,
    project_id: str,
    session: WebSession,
    caller: WebCaller,
    door: Door,
    status: Choice = "",
    fact: Choice = "",
    offset: Offset = 0,
) -> Response:
    page = door.task_list_page(
        caller, project_id, status=status or None, fact=fact or None, limit=PAGE_SIZE, offset=offset
    )
    ctx = _base(
        session,
        caller,
        project_id=project_id,
        page=page,
        status=status,
        fact=fact,
        offset=offset,
        page_size=PAGE_SIZE,
        statuses=[s.value for s in TaskStatus],
        names=_names(door, caller, project_id),
        facts=[f.value for f in Fact],
    )
    return render(request, "tasks.html", **ctx)


def _task_context(door: Door, caller: WebCaller, page: TaskPage) -> dict[str, Any]:
    v = page.view
    refused = [(e, [(code, *explain(code)) for code in e.data.get("failed", [])]) for e in v.rejections]
    return {
        "names": _names(door, caller, v.task.project_id),
        "page": page,
        "view": v,
        "project_id": v.task.project_id,
        "diffs": {c.id: candidate_diffs(door, caller, v.task.project_id, c) for c in v.candidates},
        "refused": refused,
        "receipt_json": receipt_json(v.completion) if v.completion else "",
        "last_seq": page.project_seq,  # any project event may change the page (e.g. an edit)
        "lease_key": _lease_key(page),  # and a heartbeat, which is no event
    }


def _lease_key(page: TaskPage) -> str:
    """The live attempts' lease deadlines: a heartbeat moves one without an audit event."""
    live = [a for a in page.view.attempts if a.status.value == "active"]
    return ",".join(f"{a.id}:{a.lease_deadline!r}" for a in live)


@router.get("/tasks/{task_id}")
def task(request: Request, task_id: str, session: WebSession, caller: WebCaller, door: Door) -> Response:
    ctx = _base(session, caller, **_task_context(door, caller, door.task_page(caller, task_id)))
    ctx["principals"] = _principals_or_none(door, caller, ctx["project_id"])
    ctx["admin"] = door.may_administer(caller, ctx["project_id"])
    return render(request, "task.html", **ctx)


@router.get("/tasks/{task_id}/live")
def task_live(
    request: Request,
    task_id: str,
    session: WebSession,
    caller: WebCaller,
    door: Door,
    after: After = 0,
    lease: Annotated[str, Query(max_length=2000)] = "",
) -> Response:
    """The live part of the task page, or 204 if nothing happened since event `after` and
    the live leases are still `lease` (the page's `lease_key`)."""
    page = door.task_page(caller, task_id)
    if page.project_seq <= after and lease == _lease_key(page):  # before reading blobs for the diffs
        return Response(status_code=204, headers=HEADERS)
    ctx = _base(session, caller, **_task_context(door, caller, page))
    return render(request, "_task_live.html", **ctx)


def _principals_or_none(door: Door, caller: WebCaller, project_id: str) -> list[Any]:
    try:
        return list(door.principals(caller, project_id))
    except NotFound:
        return []


def _names(door: Door, caller: WebCaller, project_id: str) -> dict[str, str]:
    return {p.id: p.name for p in _principals_or_none(door, caller, project_id)}


@router.get("/projects/{project_id}/activity")
def activity(
    request: Request, project_id: str, session: WebSession, caller: WebCaller, door: Door
) -> Response:
    events = door.latest_events(caller, project_id, 100)
    ctx = _base(session, caller, project_id=project_id, events=events, names=_names(door, caller, project_id))
    ctx["last_seq"] = events[-1].seq if events else 0
    return render(request, "activity.html", **ctx)


@router.get("/projects/{project_id}/activity/live")
def activity_live(
    request: Request, project_id: str, session: WebSession, caller: WebCaller, door: Door, after: After = 0
) -> Response:
    events = door.events(caller, project_id, after, 200)
    if not events:
        return Response(status_code=204, headers=HEADERS)
    names = _names(door, caller, project_id)
    ctx = _base(session, caller, project_id=project_id, events=events, last_seq=events[-1].seq, names=names)
    return render(request, "_events.html", **ctx)


@router.get("/projects/{project_id}/chain")
def chain(request: Request, project_id: str, session: WebSession, caller: WebCaller, door: Door) -> Response:
    report = request.app.state.web_chain.status(door, caller, project_id)
    ctx = _base(session, caller, project_id=project_id, report=report)
    return render(request, "_chain.html", **ctx)


@router.get("/projects/{project_id}/rules")
def rules(request: Request, project_id: str, session: WebSession, caller: WebCaller, door: Door) -> Response:
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
    request: Request, project_id: str, session: WebSession, caller: WebCaller, door: Door
) -> Response:
    """Delegations to remote agents, and the review queue of indeterminate ones."""
    every = door.remote_delegations(caller, project_id)
    queue = [d for d in every if d.state.value == "indeterminate"]
    ctx = _base(
        session,
        caller,
        project_id=project_id,
        delegations=every,
        queue=queue,
        admin=door.may_administer(caller, project_id),
    )
    return render(request, "delegations.html", **ctx)


@router.get("/study")
def study(request: Request, session: WebSession, caller: WebCaller) -> Response:
    rows, meta = study_rows()
    ctx = _base(session, caller, rows=rows, meta=meta, chart=chart(rows))
    return render(request, "study.html", **ctx)


@router.get("/blobs/{digest}")
def blob(digest: str, caller: WebCaller, door: Door) -> Response:
    """A verifier's log (or any readable blob) as plain text, never rendered as HTML."""
    data = door.get_blob(caller, digest)
    headers = {**HEADERS, "Content-Security-Policy": "sandbox; default-src 'none'"}
    return Response(data, media_type="text/plain; charset=utf-8", headers=headers)


def home() -> RedirectResponse:
    return RedirectResponse("/ui/", status_code=307)
