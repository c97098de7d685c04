"""A2A cancel racing an accepted completion, with real threads: exactly one winner, and the
canceller, the completing agent, GetTask and the ledger all name the same one."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from a2a.types.a2a_pb2 import CancelTaskRequest, GetTaskRequest, TaskState
from a2a.utils.errors import TaskNotCancelableError

from studiolo._exceptions import StudioloError
from studiolo.core.model import TaskStatus
from tests.faces.a2a.conftest import Live, message, send, studiolo_task_id

ROUNDS = 12
S = TaskState


@pytest.mark.slow
def test_cancel_racing_an_accepted_completion_has_one_winner(live: Live) -> None:
    w = live.world
    outcomes: list[tuple[str, str]] = []
    for i in range(ROUNDS):
        outcomes.append(_one_round(live, w, (i % 4) * 0.025))
    winners = set(outcomes)
    assert winners <= {("completed", "completed"), ("cancelled", "cancelled")}, outcomes


def _one_round(live: Live, w: Any, head_start: float) -> tuple[str, str]:
    """`head_start`: how long the completer waits after the barrier, so that both sides win
    in some rounds (which one wins is timing; that there is one, the same for all, is not)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(_race(live, w, head_start))
    finally:
        loop.close()


async def _race(live: Live, w: Any, head_start: float) -> tuple[str, str]:
    async with live.client("JSONRPC", streaming=False) as client:
        task = (await send(client, message("answer 42", live.skill)))[0].task
        tid = studiolo_task_id(task)
        st = w.coord.task_view(w.admin, tid).task
        att = w.coord.claim(w.agent, tid)
        cand = w.candidate(att, {"src/answer.txt": b"42\n"})
        receipt = w.receipt(cand)
        gate = threading.Barrier(2)
        completed: list[Any] = []

        def completer() -> None:
            gate.wait()
            time.sleep(head_start)
            try:
                completed.append(w.complete(st, att, cand, [receipt.id]))
            except StudioloError as exc:
                completed.append(exc)

        t = threading.Thread(target=completer)
        t.start()
        await asyncio.to_thread(gate.wait)
        try:
            answer = (await client.cancel_task(CancelTaskRequest(id=task.id))).status.state
            cancel = "cancelled" if answer == S.TASK_STATE_CANCELED else f"odd {answer}"
        except TaskNotCancelableError:
            cancel = "completed"
        await asyncio.to_thread(t.join)
        agent = "completed" if not isinstance(completed[0], Exception) else "cancelled"
        assert agent == cancel, (agent, cancel, completed)
        shown = await client.get_task(GetTaskRequest(id=task.id))
        ledger = w.coord.task_view(w.admin, tid).task.status
        expected = S.TASK_STATE_COMPLETED if agent == "completed" else S.TASK_STATE_CANCELED
        assert shown.status.state == expected
        assert ledger == (TaskStatus.COMPLETED if agent == "completed" else TaskStatus.CANCELLED)
        assert bool(shown.artifacts) == (agent == "completed")
        return agent, cancel
