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
from a2a.utils.errors import UnsupportedOperationError
from starlette.concurrency import run_in_threadpool

from studiolo._exceptions import Conflict, NotFound
from studiolo.core.model import Principal
from studiolo.faces.a2a.mapping import Rendering, a2a_state, render
from studiolo.service import Coordinator, DelegatedView

__all__ = ["LedgerTaskStore", "PrincipalUser", "Renderer", "principal_of"]

_BATCH = 100  # delegations read per ledger read while listing
_Matches = list[tuple[int, DelegatedView]]  # (position among the requester's delegations, view)


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
        raise NotFound("no such task", reason="task_not_found")
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
        """Full pages: the filters (context, state) apply before paging, and the page token is
        the position in the requester's delegations (newest first) after the last one read."""
        caller = principal_of(context)
        size = params.page_size or 50
        start = int(params.page_token) if params.page_token.isdigit() else 0
        matches = await run_in_threadpool(self._matching, caller, params)
        page = [(i, v) for i, v in matches if i >= start][: size + 1]
        more = str(page[size - 1][0] + 1) if len(page) > size else ""
        tasks = [self._render(v).task for _, v in page[:size]]
        return ListTasksResponse(tasks=tasks, next_page_token=more, page_size=size, total_size=len(matches))

    def _matching(self, caller: Principal, params: ListTasksRequest) -> _Matches:
        """Every delegation of the caller that passes the filters, with its position."""
        out: _Matches = []
        offset = 0
        while batch := self._door.delegations(caller, _BATCH, offset):
            for i, v in enumerate(batch, start=offset):
                if params.context_id and v.delegation.context_id != params.context_id:
                    continue
                if params.status and a2a_state(v)[0] != params.status:
                    continue
                out.append((i, v))
            offset += len(batch)
        return out

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        raise UnsupportedOperationError(message="the ledger never forgets a task")
