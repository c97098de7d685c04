"""The AgentExecutor: intake through the Coordinator, then follow the ledger and restate it.

Studiolo's own agents and verifiers do the work through the API; the executor only reads
the ledger and emits what it says, in the order that makes the terminal status last: every
artifact, then the signed manifest, then COMPLETED. Its terminal emission and a cancel share
one lock per task, so exactly one terminal sequence reaches the stream.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from typing import Any

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.types.a2a_pb2 import (
    Message,
    Part,
    Role,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError
from google.protobuf.json_format import MessageToDict, ParseDict
from starlette.concurrency import run_in_threadpool

from studiolo._exceptions import Conflict, InvalidRequest, NotFound
from studiolo.core.model import Principal
from studiolo.faces import render
from studiolo.faces.a2a.card import STATUS_SKILL
from studiolo.faces.a2a.ledger import Renderer, principal_of
from studiolo.faces.a2a.mapping import Rendering
from studiolo.service import DelegatedView, DelegationRequest, TaskView

__all__ = ["TERMINAL", "LedgerExecutor", "delegation_request"]

TERMINAL = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)


class LedgerExecutor(AgentExecutor):
    def __init__(self, renderer: Renderer, poll_seconds: float = 0.5) -> None:
        self._render = renderer
        self._door = renderer.door
        self._poll = poll_seconds
        self._locks: dict[str, asyncio.Lock] = {}
        self._ended: set[str] = set()  # tasks whose terminal sequence was emitted

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        caller = principal_of(context.call_context)
        task_id = context.task_id or ""
        if context.current_task is None and _metadata(context.message).get("skill") == STATUS_SKILL:
            await event_queue.enqueue_event(await self._status(caller, context))
            return
        if context.current_task is None:
            q = delegation_request(caller, task_id, context.context_id or "", context.message)
            try:
                view = await run_in_threadpool(self._door.delegate, caller, q)
            except InvalidRequest as exc:
                raise InvalidParamsError(message=exc.detail) from exc
            first = self._render(view)
            await event_queue.enqueue_event(first.task)
        else:  # a follow-up message: Studiolo tasks take one; keep following the ledger
            view = await run_in_threadpool(self._door.delegated, caller, task_id)
            first = self._render(view)
        await self._follow(caller, task_id, first, event_queue)

    async def _status(self, caller: Principal, context: RequestContext) -> Message:
        """The task-status skill: the ledger's view of one task, as one message (no A2A task)."""
        asked = _asked_task(context.message)
        try:
            view = await run_in_threadpool(self._door.task_view, caller, asked)
        except InvalidRequest as exc:  # not a task id at all
            raise InvalidParamsError(message=exc.detail) from exc
        except NotFound:  # no such task, or not the caller's to read: the same answer
            view = None
        parts = [Part(text=_status_text(asked, view))]
        shown: dict[str, Any] = {"task_id": asked, "found": view is not None}
        if view is not None:
            shown["view"] = render.task_view(view).model_dump(mode="json")
        parts.append(ParseDict({"data": shown}, Part()))
        return Message(
            role=Role.ROLE_AGENT,
            message_id=str(uuid.uuid4()),
            context_id=context.context_id or "",
            parts=parts,
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        caller = principal_of(context.call_context)
        task_id = context.task_id or ""
        async with self._lock(task_id):
            if task_id in self._ended:
                return
            try:
                view = await run_in_threadpool(self._door.cancel_delegated, caller, task_id)
            except Conflict:  # an accepted completion (or a cancel) committed first
                view = await run_in_threadpool(self._door.delegated, caller, task_id)
            await self._end(task_id, self._render(view), event_queue)

    async def _follow(self, caller: Principal, task_id: str, shown: Rendering, queue: EventQueue) -> None:
        last = (shown.state, shown.text)
        while shown.state not in TERMINAL:
            await asyncio.sleep(self._poll)
            shown = self._render(await self._read(caller, task_id))
            if shown.state not in TERMINAL and (shown.state, shown.text) != last:
                last = (shown.state, shown.text)
                await queue.enqueue_event(_status(shown))
        async with self._lock(task_id):
            if task_id not in self._ended:
                await self._end(task_id, shown, queue, announced=shown.state == last[0])

    async def _read(self, caller: Principal, task_id: str) -> DelegatedView:
        """The ledger's view; the requester losing sight of the task (its delegate grant was
        revoked) ends the stream with "task not found", as `GetTask` then answers."""
        try:
            view: DelegatedView = await run_in_threadpool(self._door.delegated, caller, task_id)
        except NotFound as exc:
            raise TaskNotFoundError(message="the requester no longer sees this task") from exc
        return view

    async def _end(self, task_id: str, shown: Rendering, queue: EventQueue, announced: bool = False) -> None:
        """Every artifact, then the terminal status: the only order a requester may see."""
        self._ended.add(task_id)
        self._locks.pop(task_id, None)
        for artifact in shown.artifacts:
            event = TaskArtifactUpdateEvent(
                task_id=task_id, context_id=shown.task.context_id, artifact=artifact, last_chunk=True
            )
            await queue.enqueue_event(event)
        if not announced:  # a terminal initial Task (REJECTED) is its own announcement
            await queue.enqueue_event(_status(shown))

    def _lock(self, task_id: str) -> asyncio.Lock:
        return self._locks.setdefault(task_id, asyncio.Lock())


def _status(shown: Rendering) -> TaskStatusUpdateEvent:
    task = shown.task
    return TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)


def delegation_request(
    caller: Principal, task_id: str, context_id: str, message: Message | None
) -> DelegationRequest:
    """What the requester supplies: text parts are the description, data parts the inputs,
    `metadata.skill` names the intake template (an Agent Card skill id)."""
    if message is None:
        raise InvalidParamsError(message="a delegation starts with a message")
    texts = [p.text for p in message.parts if p.HasField("text")]
    inputs: dict[str, Any] = {}
    for p in message.parts:
        if p.HasField("data"):
            value = MessageToDict(p.data)
            inputs |= value if isinstance(value, Mapping) else {"data": value}
    meta = _metadata(message)
    description = "\n".join(texts).strip()
    title = str(meta.get("title") or description.split("\n", 1)[0] or "delegated task")[:300]
    return DelegationRequest(
        a2a_id=task_id,
        context_id=context_id,
        intake=_intake_name(caller, meta.get("skill")),
        title=title,
        description=description,
        inputs=inputs,
        message=MessageToDict(message),
    )


_NAME_THE_TASK = 'name the task: its id as the text, or {"task_id": ...} in a data part'


def _metadata(message: Message | None) -> dict[str, Any]:
    return MessageToDict(message.metadata) if message is not None and message.HasField("metadata") else {}


def _asked_task(message: Message | None) -> str:
    """The task a status question names: `task_id` of a data part, else the first text."""
    parts = list(message.parts) if message is not None else []
    for p in parts:
        if p.HasField("data"):
            value = MessageToDict(p.data)
            if isinstance(value, Mapping) and isinstance(value.get("task_id"), str):
                return str(value["task_id"]).strip()
    asked = next((t for t in (p.text.strip() for p in parts if p.HasField("text")) if t), "")
    if not asked:
        raise InvalidParamsError(message=_NAME_THE_TASK)
    return asked


def _status_text(task_id: str, view: TaskView | None) -> str:
    """One line a person can read; the data part beside it is the whole view."""
    if view is None:
        return f"{task_id}: no such task (or not yours to read)"
    done = view.completion
    if done is None:
        return f"{task_id}: {view.task.status.value}, not completed ({view.fact.value})"
    current = "" if view.still_current is not False else "; its revisions have since been changed"
    return f"{task_id}: completed at commit {done.commit_version} ({done.id}, signed){current}"


def _intake_name(caller: Principal, skill: object) -> str | None:
    if skill is None:
        return None
    text = str(skill)
    prefix = f"{caller.project_id}/"
    return text[len(prefix) :] if text.startswith(prefix) else text
