"""The Activity page: the project's events newest first, a page at a time, filtered by kind,
each with its detail; new events appear at the top while the first page is open. And the
audit chain's status."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response

from studiolo.core.model import Event, Principal
from studiolo.faces.web.pages import names_of
from studiolo.faces.web.routing import WebRouter
from studiolo.faces.web.session import Session
from studiolo.faces.web.templating import HEADERS, render
from studiolo.service import Coordinator

__all__ = ["EVENTS_PAGE", "router"]

router = WebRouter("/ui")
EVENTS_PAGE = 50
After = Annotated[int, Field(ge=0, le=2**53)]
Before = Annotated[int | None, Field(ge=1, le=2**53)]
Kind = Annotated[str, Field(max_length=60)]


def _shown(events: list[Event]) -> list[tuple[Event, str]]:
    """Newest first, each with its data as indented JSON (the row's detail)."""
    return [
        (e, json.dumps(dict(e.data), indent=2, sort_keys=True, ensure_ascii=False)) for e in reversed(events)
    ]


@router.get("/projects/{project_id}/activity")
def activity(
    request: Request,
    project_id: str,
    session: Session,
    caller: Principal,
    door: Coordinator,
    kind: Kind = "",
    before: Before = None,
) -> Response:
    kind = kind.strip()
    events = door.latest_events(caller, project_id, EVENTS_PAGE, before=before, kind=kind or None)
    newest = door.latest_events(caller, project_id, 1) if before is None and kind else events
    ctx: dict[str, Any] = {
        "me": caller,
        "csrf": session.csrf,
        "project_id": project_id,
        "events": _shown(events),
        "names": names_of(door, caller, project_id),
        "kind": kind,
        "before": before,
        "older": events[0].seq if len(events) == EVENTS_PAGE else None,
        "last_seq": newest[-1].seq if newest else 0,
    }
    return render(request, "activity.html", **ctx)


@router.get("/projects/{project_id}/activity/live")
def activity_live(
    request: Request,
    project_id: str,
    session: Session,
    caller: Principal,
    door: Coordinator,
    after: After = 0,
    kind: Kind = "",
) -> Response:
    """The events after `after` (of `kind` if given), newest first; 204 when there is none.
    The first row carries the seq the page asks after next."""
    events = door.events(caller, project_id, after, 200)
    if not events:
        return Response(status_code=204, headers=HEADERS)
    last = events[-1].seq
    kind = kind.strip()
    listed = [e for e in events if not kind or e.kind == kind]
    ctx = {
        "me": caller,
        "csrf": session.csrf,
        "events": _shown(listed),
        "names": names_of(door, caller, project_id),
        "last_seq": last,
    }
    return render(request, "_events.html", **ctx)


@router.get("/projects/{project_id}/chain")
def chain(
    request: Request, project_id: str, session: Session, caller: Principal, door: Coordinator
) -> Response:
    report = request.app.state.web_chain.status(door, caller, project_id)
    ctx = {"me": caller, "csrf": session.csrf, "project_id": project_id, "report": report}
    return render(request, "_chain.html", **ctx)
