"""One project with every story the dashboard must show (the browser tests share it): a task
refused for a stale dependency, one whose lease ran out, one delegated and indeterminate, one
accepted and awaiting a required deployment, one deployed, one accepted then edited, one
cancelled with a reason holding a bidi override, one with a 300-character title."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from studiolo._exceptions import CompletionRejected
from studiolo.core.model import Task
from tests.faces.web.test_delegations_page import _indeterminate
from tests.world import World

LONG_TITLE = "Refactor-" + "the-completion-ledger-" * 13
LONG_TITLE = LONG_TITLE[:300]
BIDI_REASON = "superseded by the \u202eelif\u202c plan"


@dataclass(frozen=True)
class Story:
    refused: str
    lapsed: str
    delegated: str
    awaiting: str
    deployed: str
    accepted: str
    cancelled: str
    long: str
    open: str


def _accept(world: World, task: Task, path: str, data: bytes) -> int:
    attempt = world.coord.claim(world.agent, task.id)
    cand = world.candidate(attempt, {path: data})
    out = world.complete(task, attempt, cand, [world.receipt(cand).id])
    return out.completion.revisions[path]


def tell(world: World) -> Story:
    c, w, pid = world.coord, world, world.project_id
    lapsed = w.new_task("rotate the signing key")
    c.claim(w.agent2, lapsed.id, lease_seconds=30)
    w.clock.advance(60)  # its lease runs out; every later lease is taken after this

    refused = w.new_task("double the input")
    attempt = c.claim(w.agent, refused.id)
    rev = c.read_revision(w.admin, pid, "src/input.txt")
    cand = w.candidate(attempt, {"src/double.txt": b"42\n"}, deps={"src/input.txt": rev})
    receipt = w.receipt(cand)
    w.edit("src/input.txt", b"22\n")
    with pytest.raises(CompletionRejected):
        w.complete(refused, attempt, cand, [receipt.id])

    awaiting = w.new_task("ship the deploy banner", requires_deployment=True)
    _accept(w, awaiting, "src/banner.txt", b"hello\n")
    deployed = w.new_task("ship the deploy footer", requires_deployment=True)
    footer = _accept(w, deployed, "src/footer.txt", b"bye\n")
    c.observe(w.human, pid, "src/footer.txt", "deployed", revision=footer)
    accepted = w.new_task("write the answer")
    _accept(w, accepted, "src/answer.txt", b"42\n")
    w.edit("src/answer.txt", b"43\n")

    cancelled = w.new_task("migrate the old ledger")
    c.claim(w.agent, cancelled.id)
    c.cancel_task(w.admin, cancelled.id, BIDI_REASON)
    long = w.new_task(LONG_TITLE, description="A title of 300 characters without a space.")
    delegated = c.remote_state(_indeterminate(w)).task_id
    opened = w.new_task("document the API")
    return Story(
        refused.id,
        lapsed.id,
        delegated,
        awaiting.id,
        deployed.id,
        accepted.id,
        cancelled.id,
        long.id,
        opened.id,
    )
