"""Every tool, defined once over `StudioloPort`. A tool parses, calls the port, renders: the
door decides everything (no tool sets a status). `PortFor` gives the port of the calling
principal: from the bearer token over HTTP, from `STUDIOLO_TOKEN` over stdio."""

from __future__ import annotations

import base64
import inspect
from collections.abc import Callable
from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from studiolo._exceptions import InvalidRequest, NotFound
from studiolo.api import responses as s
from studiolo.api.requests import CandidateIn, CompleteIn, Short, Text
from studiolo.core.paths import MAX_PATH_LENGTH
from studiolo.faces.mcp import models as m
from studiolo.faces.mcp.port import StudioloPort
from studiolo.faces.mcp.refusals import answer
from studiolo.faces.mcp.schemas import lean_tool
from studiolo.faces.mcp.workspace import Workspace
from studiolo.settings import Settings

__all__ = ["TOOL_NAMES", "WORKSPACE_TOOL_NAMES", "PortFor", "Tools", "WorkspaceTools"]

PortFor = Callable[[Context], StudioloPort]
OnRead = Callable[[str, int], None]  # (path, revision) of a current read, for the workspace

# Every string argument is bounded (the wire models' limits where they have one): a 100 KB
# path reached the HTTP client as a URL it refused with an unexpected exception.
TaskId = Annotated[str, Field(description="a task id (tsk_…)", max_length=100)]
AttemptId = Annotated[str, Field(description="your attempt id (att_…), from claim_task", max_length=100)]
CandidateId = Annotated[str, Field(description="a candidate id (cnd_…)", max_length=100)]
Lease = Annotated[float | None, Field(description="lease seconds (default: the server's)", gt=0)]
PathArg = Annotated[str, Field(max_length=MAX_PATH_LENGTH)]  # as the HTTP API's path parameters
# A file's content inline: no more than the largest body /mcp accepts (`max_candidate_bytes`).
Content = Annotated[str, Field(max_length=Settings.max_candidate_bytes)]
Revisions = Annotated[dict[PathArg, int], Field(description="path → revision")]
_EVENT_PAGE = 1000
_EVENT_PAGES = 20

_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
_LOCAL_WRITE = ToolAnnotations(  # checkout: writes (and may discard, if asked) local files
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)
_IDEMPOTENT = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


class Tools:
    """The tools of both transports."""

    def __init__(self, port_for: PortFor, on_read: OnRead | None = None) -> None:
        self.port_for = port_for
        self.on_read = on_read

    def tools(self) -> list[Tool]:
        return [_tool(getattr(self, name), hints) for name, hints in _TOOLS.items()]

    def orient(self, ctx: Context) -> Annotated[CallToolResult, s.OrientationOut]:
        """Read first: who you are, the project's pinned policy, your grants, the open tasks
        and the attempts you hold."""
        return answer(lambda: self.port_for(ctx).orientation())

    def list_tasks(
        self,
        ctx: Context,
        status: Annotated[
            Literal["open", "claimed", "completed", "cancelled"] | None,
            Field(description="default: every status"),
        ] = None,
        limit: Annotated[int, Field(description="tasks per page", ge=1, le=200)] = 25,
        cursor: Annotated[
            str | None, Field(description="next_cursor of the previous page", max_length=200)
        ] = None,
    ) -> Annotated[CallToolResult, m.TaskList]:
        """The project's tasks, oldest first, a page at a time, each with its strongest
        established fact. Pass `next_cursor` back as `cursor` for the next page."""
        return answer(lambda: _task_page(self.port_for(ctx), status, limit, cursor))

    def get_task(self, task_id: TaskId, ctx: Context) -> Annotated[CallToolResult, s.TaskViewOut]:
        """A task: its contract (criteria, scope, hash), the strongest established fact and
        whether an accepted result is still current (`bytes_deleted` says why not, if its
        bytes were deleted), attempts, candidates, receipts, completion and refused completions."""
        return answer(lambda: self.port_for(ctx).task(task_id))

    def claim_task(
        self, task_id: TaskId, ctx: Context, lease_seconds: Lease = None
    ) -> Annotated[CallToolResult, m.Claimed]:
        """Claim a task: a new attempt with a fence and a lease. Keep its id and the
        contract hash; heartbeat before the lease ends."""
        return answer(lambda: _claim(self.port_for(ctx), task_id, lease_seconds))

    def heartbeat(
        self, attempt_id: AttemptId, ctx: Context, lease_seconds: Lease = None
    ) -> Annotated[CallToolResult, s.AttemptOut]:
        """Extend the lease of your live attempt."""
        return answer(lambda: self.port_for(ctx).heartbeat(attempt_id, lease_seconds))

    def release_task(self, attempt_id: AttemptId, ctx: Context) -> Annotated[CallToolResult, s.AttemptOut]:
        """Give the task back: your attempt ends and the task is open again."""
        return answer(lambda: self.port_for(ctx).release(attempt_id))

    def list_artifacts(
        self,
        ctx: Context,
        prefix: Annotated[str, Field(description="e.g. src/", max_length=MAX_PATH_LENGTH)] = "",
    ) -> Annotated[CallToolResult, m.ArtifactList]:
        """The current artifacts under a prefix: path, revision, digest."""
        return answer(lambda: m.ArtifactList(artifacts=self.port_for(ctx).artifacts(prefix)))

    def read_artifact(
        self,
        path: Annotated[
            str, Field(description="a logical path, e.g. src/app.py", max_length=MAX_PATH_LENGTH)
        ],
        ctx: Context,
        revision: Annotated[int | None, Field(description="default: the current", ge=0)] = None,
    ) -> Annotated[CallToolResult, m.ArtifactContent]:
        """An artifact's content (UTF-8 text, else base64) and the revision you read: declare
        it as a dependency or base when you submit."""
        return answer(lambda: _read(self.port_for(ctx), path, revision, self.on_read))

    def submit_candidate(
        self,
        attempt_id: AttemptId,
        files: Annotated[
            dict[PathArg, Content | None],
            Field(description="path → new UTF-8 content; null deletes the path"),
        ],
        bases: Annotated[
            dict[PathArg, int], Field(description="path → revision you changed (0: a new path)")
        ],
        ctx: Context,
        file_deps: Annotated[
            dict[PathArg, int], Field(description="path → revision of each file you read")
        ] = {},  # noqa: B006
        collection_deps: Annotated[
            dict[PathArg, int], Field(description="prefix/ → collection revision, for 'everything under'")
        ] = {},  # noqa: B006
    ) -> Annotated[CallToolResult, s.CandidateOut]:
        """Submit immutable candidate bytes for your attempt, with the base revision of every
        path you write and the revisions of what you read. The server derives the write set."""
        return answer(
            lambda: _submit(self.port_for(ctx), attempt_id, files, bases, file_deps, collection_deps)
        )

    def get_receipts(
        self, candidate_id: CandidateId, ctx: Context
    ) -> Annotated[CallToolResult, m.ReceiptList]:
        """The verifiers' signed receipts for a candidate (pass, fail), per criterion."""
        return answer(
            lambda: m.ReceiptList(
                candidate_id=candidate_id, receipts=self.port_for(ctx).receipts(candidate_id)
            )
        )

    def complete_task(
        self,
        task_id: TaskId,
        candidate_id: CandidateId,
        contract_hash: Annotated[str, Field(description="the hash claim_task gave you", max_length=100)],
        ctx: Context,
        evidence: Annotated[
            list[Short] | None,
            Field(description="receipt ids (default: all of the candidate's)", max_length=100),
        ] = None,
        request_id: Annotated[
            Short | None, Field(description="default ATTEMPT:CANDIDATE (a retry replays)")
        ] = None,
    ) -> Annotated[CallToolResult, m.Completed]:
        """Ask for the task to be recorded as completed with this candidate, at one atomic
        commit. A refusal lists every failed predicate in order, each with a recovery hint."""
        return answer(
            lambda: _complete(self.port_for(ctx), task_id, candidate_id, contract_hash, evidence, request_id)
        )

    def leave_handoff(
        self,
        attempt_id: AttemptId,
        ctx: Context,
        artifacts: Annotated[Revisions, Field(description="path → revision you relied on")] = {},  # noqa: B006
        obligations: Annotated[list[Text], Field(description="what is still open", max_length=200)] = [],  # noqa: B006
        notes: Annotated[str, Field(max_length=100_000)] = "",
    ) -> Annotated[CallToolResult, s.HandoffOut]:
        """Leave references to authority for a successor (revisions, obligations, notes)."""
        return answer(lambda: self.port_for(ctx).handoff(attempt_id, artifacts, obligations, notes))

    def read_handoff(self, task_id: TaskId, ctx: Context) -> Annotated[CallToolResult, m.HandoffRead]:
        """The latest handoff of a task, with which of its references are still current
        (`handoff` is null when nobody left one)."""
        return answer(lambda: _handoff(self.port_for(ctx), task_id))

    def task_events(
        self,
        task_id: TaskId,
        ctx: Context,
        after: Annotated[int, Field(description="only events with seq > after", ge=0)] = 0,
        limit: Annotated[int, Field(ge=1, le=1000)] = 50,
    ) -> Annotated[CallToolResult, m.TaskEvents]:
        """The audit events about a task, its attempts, candidates and receipts, oldest first."""
        return answer(lambda: _task_events(self.port_for(ctx), task_id, after, limit))


class WorkspaceTools:
    """The stdio server's tools over the agent's working directory."""

    def __init__(self, port_for: PortFor, workspace: Workspace) -> None:
        self.port_for = port_for
        self.workspace = workspace

    def tools(self) -> list[Tool]:
        return [_tool(self.checkout, _LOCAL_WRITE), _tool(self.submit_workspace, _WRITE)]

    def checkout(
        self,
        directory: Annotated[
            str, Field(description="relative to the working directory, e.g. work", max_length=MAX_PATH_LENGTH)
        ],
        ctx: Context,
        prefix: Annotated[
            str, Field(description="only paths under this prefix, e.g. src/", max_length=MAX_PATH_LENGTH)
        ] = "",
        overwrite: Annotated[
            bool, Field(description="discard local changes the checkout would overwrite")
        ] = False,
        git: Annotated[
            bool, Field(description="a git clone of the published branch (the whole project) instead")
        ] = False,
    ) -> Annotated[CallToolResult, m.Checkout]:
        """Write the current artifacts (under a prefix) into a directory inside the working
        directory, with a manifest of the revisions read (.studiolo-checkout.json). Refuses,
        naming them, to overwrite files changed since the last checkout, unless `overwrite`.
        With `git`, clone the published branch into a new directory (manifest in .git/)."""
        return answer(lambda: self.workspace.checkout(self.port_for(ctx), directory, prefix, overwrite, git))

    def submit_workspace(
        self,
        attempt_id: AttemptId,
        directory: Annotated[
            str, Field(description="the directory you checked out", max_length=MAX_PATH_LENGTH)
        ],
        ctx: Context,
        declare_collection: Annotated[
            bool, Field(description="declare you read everything under the checkout's prefix")
        ] = False,
        file_deps: Annotated[
            dict[PathArg, int], Field(description="more files you read: path → revision")
        ] = {},  # noqa: B006
    ) -> Annotated[CallToolResult, m.WorkspaceCandidate]:
        """Submit the directory's changes as a candidate: changed and new files are uploaded,
        removed files deleted; bases come from the checkout manifest. Declared as read: the
        unchanged checked-out files, every file read_artifact returned in this session, and
        `file_deps`. On a git checkout: the work tree against its base commit, reads the
        `file_deps` paths, else the unchanged files beside the change."""
        return answer(
            lambda: self.workspace.submit(
                self.port_for(ctx), attempt_id, directory, declare_collection, file_deps
            )
        )


def _tool(fn: Callable[..., CallToolResult], hints: ToolAnnotations) -> Tool:
    return lean_tool(
        Tool.from_function(fn, description=inspect.cleandoc(fn.__doc__ or ""), annotations=hints)
    )


def _claim(port: StudioloPort, task_id: str, lease_seconds: float | None) -> m.Claimed:
    attempt = port.claim(task_id, lease_seconds)
    task = port.task(task_id).task
    return m.Claimed(attempt=attempt, contract_hash=task.contract_hash, contract=task.contract)


def _read(port: StudioloPort, path: str, revision: int | None, on_read: OnRead | None) -> m.ArtifactContent:
    art = port.artifact(path, revision)
    if on_read is not None and revision is None:  # a past revision read on purpose is no dependency
        on_read(art.path, art.revision)
    if art.digest is None:
        return m.ArtifactContent(artifact=art, encoding=None, content=None)
    data = port.get_blob(art.digest)
    try:
        return m.ArtifactContent(artifact=art, encoding="utf-8", content=data.decode("utf-8"))
    except UnicodeDecodeError:
        return m.ArtifactContent(artifact=art, encoding="base64", content=base64.b64encode(data).decode())


def _submit(
    port: StudioloPort,
    attempt_id: str,
    files: dict[str, str | None],
    bases: dict[str, int],
    file_deps: dict[str, int],
    collection_deps: dict[str, int],
) -> s.CandidateOut:
    digests = {
        p: (port.put_blob(text.encode("utf-8")) if text is not None else None) for p, text in files.items()
    }
    draft = CandidateIn(files=digests, bases=bases, file_deps=file_deps, collection_deps=collection_deps)
    return port.submit_candidate(attempt_id, draft)


def _complete(
    port: StudioloPort,
    task_id: str,
    candidate_id: str,
    contract_hash: str,
    evidence: list[str] | None,
    request_id: str | None,
) -> m.Completed:
    cand = port.candidate(candidate_id)
    attempt = port.attempt(cand.attempt_id)
    cited = evidence if evidence is not None else [r.id for r in port.receipts(cand.id)]
    request = CompleteIn(
        request_id=request_id or f"{attempt.id}:{cand.id}",
        attempt_id=attempt.id,
        fence=attempt.fence,
        contract_hash=contract_hash,
        candidate_id=cand.id,
        evidence=cited,
    )
    completion, replay = port.complete(task_id, request)
    return m.Completed(completion=completion, replay=replay)


def _task_page(port: StudioloPort, status: str | None, limit: int, cursor: str | None) -> m.TaskList:
    offset = _offset(cursor, status)
    tasks = port.tasks(status, limit + 1, offset)  # one more: is there a next page?
    more = len(tasks) > limit
    return m.TaskList(tasks=tasks[:limit], next_cursor=_cursor(offset + limit, status) if more else None)


def _cursor(offset: int, status: str | None) -> str:
    return base64.urlsafe_b64encode(f"{status or ''}:{offset}".encode()).decode()


def _offset(cursor: str | None, status: str | None) -> int:
    """The offset a cursor stands for; one made for another status filter is refused."""
    if cursor is None:
        return 0
    try:
        made_for, _, offset = base64.urlsafe_b64decode(cursor.encode()).decode().partition(":")
        value = int(offset)
    except ValueError as exc:  # binascii.Error and UnicodeDecodeError are ValueErrors
        raise InvalidRequest("not a cursor list_tasks gave") from exc
    if made_for != (status or "") or value < 0:
        raise InvalidRequest("that cursor belongs to a listing with another status filter")
    return value


def _handoff(port: StudioloPort, task_id: str) -> m.HandoffRead:
    """The handoff view; no handoff (`not_found`, the task itself visible) is a normal answer."""
    try:
        view = port.handoff_view(task_id)
    except NotFound as exc:
        if exc.reason != "not_found":  # `task_not_found`: the task, not its handoff
            raise
        return m.HandoffRead(task_id=task_id, handoff=None, contract_current=None, artifacts={})
    current, refs = view.contract_current, view.artifacts
    return m.HandoffRead(task_id=task_id, handoff=view.handoff, contract_current=current, artifacts=refs)


def _task_events(port: StudioloPort, task_id: str, after: int, limit: int) -> m.TaskEvents:
    """Scan the project's events after `after` (at most 20 pages) for those about the task."""
    view = port.task(task_id)
    subjects = {task_id, *(a.id for a in view.attempts), *(c.id for c in view.candidates)}
    subjects.update(r.id for r in view.receipts)
    found: list[s.EventOut] = []
    cursor = after
    for _ in range(_EVENT_PAGES):
        page = port.events(cursor, _EVENT_PAGE)
        for event in page:
            cursor = event.seq
            if event.subject in subjects:
                found.append(event)
                if len(found) == limit:
                    return m.TaskEvents(task_id=task_id, events=found, next_after=cursor)
        if len(page) < _EVENT_PAGE:
            break
    return m.TaskEvents(task_id=task_id, events=found, next_after=cursor)


_TOOLS: dict[str, ToolAnnotations] = {
    "orient": _READ,
    "list_tasks": _READ,
    "get_task": _READ,
    "claim_task": _WRITE,
    "heartbeat": _IDEMPOTENT,
    "release_task": _WRITE,
    "list_artifacts": _READ,
    "read_artifact": _READ,
    "submit_candidate": _WRITE,
    "get_receipts": _READ,
    "complete_task": _IDEMPOTENT,
    "leave_handoff": _WRITE,
    "read_handoff": _READ,
    "task_events": _READ,
}
TOOL_NAMES: tuple[str, ...] = tuple(_TOOLS)
WORKSPACE_TOOL_NAMES: tuple[str, ...] = ("checkout", "submit_workspace")
