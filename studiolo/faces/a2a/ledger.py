"""The SDK's `TaskStore` over the Coordinator: the ledger is the task store.

`get` renders the delegation from one ledger read (docs/a2a.md); the SDK's working copy is
never persisted beside it. `save` writes nothing except a CANCELED the SDK records for a task
no executor is following; that goes through the Coordinator's cancel (the completion's commit
point), and a cancel that loses to an accepted completion is reported as a concurrent change.
A FAILED the ledger does not hold is refused the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from a2a.auth.user import User
from a2a.server.cluster.task_store import ConcurrentTaskModificationError
from a2a.server.context import ServerCallContext
from a2a.server.tasks.task_store import TaskStore
from a2a.types.a2a_pb2 import ListTasksRequest, ListTasksResponse, Task, TaskState
from a2a.utils.errors import InvalidParamsError, UnsupportedOperationError
from a2a.utils.task import ListTasksCursor, decode_list_tasks_cursor, encode_list_tasks_cursor
from starlette.concurrency import run_in_threadpool

from studiolo._exceptions import Conflict, NotFound
from studiolo.core.model import Principal
from studiolo.core.reasons import Reason
from studiolo.faces.a2a.mapping import Rendering, render
from studiolo.service import Coordinator, DelegatedView

__all__ = ["LedgerTaskStore", "PrincipalUser", "Renderer", "principal_of"]

_BATCH = 100  # delegations read per ledger read while listing
_Tasks = list[Task]  # (the store's `list` method shadows the builtin in its class)


def _order(task: Task) -> tuple[bool, int, str]:
    """The listing's sort key, the SDK's: (has a timestamp, timestamp in ns, id), descending."""
    return (True, task.status.timestamp.ToNanoseconds(), task.id)


def _cursor(task: Task) -> ListTasksCursor:
    return ListTasksCursor(timestamp_ns=task.status.timestamp.ToNanoseconds(), task_id=task.id)


class PrincipalUser(User):
    """The authenticated Studiolo principal behind an A2A call."""

    def __init__(self, principal: Principal) -> None:
        self.principal = principal

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self.principal.name


def principal_of(context: ServerCallContext) -> Principal:
    user = context.user
    if not isinstance(user, PrincipalUser):  # the auth gate admits no other kind of call
        raise NotFound("no such task", reason=Reason.TASK_NOT_FOUND)
    return user.principal


@dataclass(frozen=True)
class Renderer:
    """What rendering needs besides the ledger: the key, the public URL, the inline bound."""

    door: Coordinator
    base_url: str
    inline_max: int

    def __call__(self, view: DelegatedView) -> Rendering:
        return render(view, self.door.signing_key(), self.base_url, self.inline_max)


class LedgerTaskStore(TaskStore):
    def __init__(self, renderer: Renderer) -> None:
        self._render = renderer
        self._door = renderer.door

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        caller = principal_of(context)
        try:
            view = await run_in_threadpool(self._door.delegated, caller, task_id)
        except NotFound:
            return None
        return self._render(view).task

    async def save(self, task: Task, context: ServerCallContext) -> None:
        if task.status.state == TaskState.TASK_STATE_FAILED:
            await self._refuse_failed(task, context)
            return
        if task.status.state != TaskState.TASK_STATE_CANCELED:
            return  # the executor's events only restate the ledger; nothing to persist
        caller = principal_of(context)
        try:
            view = await run_in_threadpool(self._door.delegated, caller, task.id)
            if self._render(view).state == TaskState.TASK_STATE_CANCELED:
                return
            await run_in_threadpool(self._door.cancel_delegated, caller, task.id)
        except (Conflict, NotFound) as exc:
            raise ConcurrentTaskModificationError(task.id) from exc

    async def _refuse_failed(self, task: Task, context: ServerCallContext) -> None:
        """The SDK writes FAILED when an executor raises; the ledger decides, so unless it says
        FAILED too the write is a concurrent change: the SDK then reports the error itself and
        no stream shows a FAILED that `GetTask` would contradict."""
        caller = principal_of(context)
        try:
            view = await run_in_threadpool(self._door.delegated, caller, task.id)
        except NotFound as exc:  # e.g. the requester's delegate grant was revoked
            raise ConcurrentTaskModificationError(task.id) from exc
        if self._render(view).state != TaskState.TASK_STATE_FAILED:
            raise ConcurrentTaskModificationError(task.id)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """Most recently updated first (the status timestamp, then the id), as A2A orders a
        listing; the filters (context, state, `statusTimestampAfter`) apply before paging, so
        every page but the last is full; the page token is the SDK's cursor (timestamp, id) of
        the page's last task, so a later page starts strictly after it."""
        caller = principal_of(context)
        size = params.page_size or 50
        matches = sorted(await run_in_threadpool(self._matching, caller, params), key=_order, reverse=True)
        cursor = decode_list_tasks_cursor(params.page_token) if params.page_token else None
        if params.page_token and cursor is None:
            raise InvalidParamsError(message="unknown page token")
        after = cursor.sort_key() if cursor is not None else None
        page = [t for t in matches if after is None or _order(t) < after][: size + 1]
        more = encode_list_tasks_cursor(_cursor(page[size - 1])) if len(page) > size else ""
        return ListTasksResponse(
            tasks=page[:size], next_page_token=more, page_size=size, total_size=len(matches)
        )

    def _matching(self, caller: Principal, params: ListTasksRequest) -> _Tasks:
        """Every delegation of the caller that passes the filters, rendered."""
        since = (
            params.status_timestamp_after.ToMicroseconds()
            if params.HasField("status_timestamp_after")
            else None
        )
        out: _Tasks = []
        offset = 0
        while batch := self._door.delegations(caller, _BATCH, offset):
            for v in batch:
                if params.context_id and v.delegation.context_id != params.context_id:
                    continue
                task = self._render(v).task
                if params.status and task.status.state != params.status:
                    continue
                if since is not None and task.status.timestamp.ToMicroseconds() < since:
                    continue
                out.append(task)
            offset += len(batch)
        return out

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        raise UnsupportedOperationError(message="the ledger never forgets a task")
