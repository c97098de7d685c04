"""The Tasks page: what needs attention, counts per strongest fact, a search by title or id,
filters, pages, and a live list (a fragment that answers 204 until a project event happens)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, replace
from typing import Annotated, Any
from urllib.parse import urlencode

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response

from studiolo.core.facts import Fact
from studiolo.core.model import Principal, TaskStatus
from studiolo.faces.web.pages import names_of
from studiolo.faces.web.routing import WebRouter
from studiolo.faces.web.session import Session
from studiolo.faces.web.templating import HEADERS, render
from studiolo.service import Coordinator
from studiolo.service.overview import Attention, RowsSnapshot

__all__ = ["PAGE_SIZE", "ListQuery", "RowsCache", "router"]

router = WebRouter("/ui")
PAGE_SIZE = 20
Choice = Annotated[str, Field(max_length=30)]
Search = Annotated[str, Field(max_length=200)]
Offset = Annotated[int, Field(ge=0, le=10**9)]
Policy = Annotated[int | None, Field(ge=0, le=2**31)]
After = Annotated[int, Field(ge=0, le=2**53)]


class RowsCache:
    """The latest rows of each project's task list (`RowsSnapshot`), handed back to the door,
    which reuses them while no event happened and no lease ran out: a live list, or many
    people on the same list, cost one small read a load until something changes."""

    def __init__(self, limit: int = 64) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._by_project: OrderedDict[str, RowsSnapshot] = OrderedDict()

    def get(self, project_id: str) -> RowsSnapshot | None:
        with self._lock:
            return self._by_project.get(project_id)

    def keep(self, snapshot: RowsSnapshot | None) -> None:
        if snapshot is None:
            return
        with self._lock:
            self._by_project[snapshot.project_id] = snapshot
            self._by_project.move_to_end(snapshot.project_id)
            while len(self._by_project) > self._limit:
                self._by_project.popitem(last=False)


@dataclass(frozen=True)
class ListQuery:
    """The list's query string: every link on the page keeps the rest of it."""

    q: str = ""
    status: str = ""
    fact: str = ""
    attention: str = ""
    policy: int | None = None
    offset: int = 0

    def url(self, **changes: Any) -> str:
        """`?…` with `changes` applied (a changed filter goes back to the first page)."""
        changed = replace(self, **({"offset": 0} | changes))
        fields = {k: v for k, v in asdict(changed).items() if v not in ("", None, 0)}
        return "?" + urlencode(fields)

    @property
    def filtered(self) -> bool:
        return any((self.q, self.status, self.fact, self.attention, self.policy is not None))


def _query(q: str, status: str, fact: str, attention: str, policy: int | None, offset: int) -> ListQuery:
    return ListQuery(q.strip(), status, fact, attention, policy, offset)


def _context(
    request: Request, door: Coordinator, caller: Principal, session: Session, project_id: str, lq: ListQuery
) -> dict[str, Any]:
    cache: RowsCache = request.app.state.web_rows
    page = door.task_list_page(
        caller,
        project_id,
        status=lq.status or None,
        fact=lq.fact or None,
        attention=lq.attention or None,
        query=lq.q,
        policy_version=lq.policy,
        limit=PAGE_SIZE,
        offset=lq.offset,
        since=cache.get(project_id),
    )
    cache.keep(page.snapshot)
    return {
        "me": caller,
        "csrf": session.csrf,
        "project_id": project_id,
        "page": page,
        "lq": lq,
        "page_size": PAGE_SIZE,
        "statuses": [s.value for s in TaskStatus],
        "facts": [f.value for f in Fact],
        "attentions": [a.value for a in Attention],
        "names": names_of(door, caller, project_id),
    }


@router.get("/projects/{project_id}")
def tasks(
    request: Request,
    project_id: str,
    session: Session,
    caller: Principal,
    door: Coordinator,
    q: Search = "",
    status: Choice = "",
    fact: Choice = "",
    attention: Choice = "",
    policy: Policy = None,
    offset: Offset = 0,
) -> Response:
    lq = _query(q, status, fact, attention, policy, offset)
    return render(request, "tasks.html", **_context(request, door, caller, session, project_id, lq))


@router.get("/projects/{project_id}/tasks/live")
def tasks_live(
    request: Request,
    project_id: str,
    session: Session,
    caller: Principal,
    door: Coordinator,
    after: After = 0,
    q: Search = "",
    status: Choice = "",
    fact: Choice = "",
    attention: Choice = "",
    policy: Policy = None,
    offset: Offset = 0,
) -> Response:
    """The list's live part, or 204 if no event happened in the project since `after` (the
    page asks with `after=0` when a lease it shows runs out, which is no event)."""
    latest = door.latest_events(caller, project_id, 1)  # one small read, authorized
    if after and (latest[-1].seq if latest else 0) <= after:
        return Response(status_code=204, headers=HEADERS)
    lq = _query(q, status, fact, attention, policy, offset)
    return render(request, "_tasks_live.html", **_context(request, door, caller, session, project_id, lq))
