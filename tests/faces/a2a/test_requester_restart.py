"""`studiolo serve` SIGKILLed while a delegation awaits artifact quiescence, then restarted on
the same ledger: the wait resumes (its bound counted from when it began), the task is
finalized once, and a further restart changes nothing."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from studiolo.core.model import TaskStatus
from studiolo.core.remote import RemoteState
from studiolo.faces.http.server import free_port
from studiolo.keys import ServiceKey
from studiolo.workers.a2a.requester import fetch_verified_card
from tests.faces.a2a.remote_agent import Scenario, remote_agent
from tests.world import World, build_world

STUDIOLO = [sys.executable, "-c", "from studiolo.faces.cli import main; main()"]
BIG = os.urandom(2 * 1024 * 1024)


@contextmanager
def serving(url: str, port: int, tmp: Path) -> Iterator[subprocess.Popen[bytes]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STUDIOLO_")}
    env |= {
        "STUDIOLO_A2A_POLL_SECONDS": "0.05",
        "STUDIOLO_A2A_BACKOFF_INITIAL": "0.05",
        "STUDIOLO_A2A_BACKOFF_MAX": "0.2",
        "STUDIOLO_A2A_CONFIRM_SECONDS": "0.05",
        "STUDIOLO_A2A_QUIESCENCE_BOUND": "120",
    }
    log = (tmp / f"serve-{time.monotonic_ns()}.log").open("wb")
    proc = subprocess.Popen(
        [*STUDIOLO, "serve", "--database-url", url, "--port", str(port)], env=env, stdout=log, stderr=log
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=20)
        log.close()


def _until(check: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _accepted(world: World, task_id: str) -> int:
    events = world.coord.events(world.admin, world.project_id, limit=1000)
    return sum(1 for e in events if e.kind == "completion.accepted" and e.subject == task_id)


def test_sigkill_while_awaiting_quiescence_then_restart(tmp_path: Path) -> None:
    key = ServiceKey.generate()
    world = build_world(tmp_path, time.time)
    c = world.coord
    c.add_remote_org(world.admin, world.project_id, "acme", {key.kid: key.public})
    task = world.new_task("attest", criteria={"attested": "a2a-acme@1"}, scope=["remote/**"])
    scenario = Scenario(detached={"bundle.bin": BIG})
    port = free_port()
    with remote_agent(scenario, key) as agent:
        org = c.set_remote_origins(world.admin, world.project_id, "acme", [agent.url])  # loopback: named
        card = asyncio.run(fetch_verified_card(agent.url, org, deadline=5.0))
        d = c.delegate_remote(
            world.admin, task.id, "acme", agent_url=agent.url, card_digest=card.digest, card_kid=card.kid
        )
        with serving(c.store.url, port, tmp_path) as first:
            _until(lambda: c.remote_state(d.id).state is RemoteState.AWAITING, "never awaited quiescence")
            _until(lambda: "bundle.bin" in scenario.fetches, "the bundle was never asked for")
            since = c.remote_state(d.id).since
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=10)
        assert c.remote_state(d.id).state is RemoteState.AWAITING
        assert c.task_view(world.admin, task.id).task.status is TaskStatus.CLAIMED
        scenario.release("bundle.bin")  # it arrives while the requester is down
        asked = len(scenario.fetches)
        with serving(c.store.url, port, tmp_path):
            _until(lambda: c.remote_state(d.id).state is RemoteState.FINALIZED, "the wait did not resume")
        assert len(scenario.fetches) > asked
        done = c.remote_state(d.id)
        assert done.since == since  # the same wait, resumed: its bound did not restart
        with serving(c.store.url, port, tmp_path):
            time.sleep(1.0)  # a third start finds nothing to do
    assert c.remote_state(d.id) == done
    assert _accepted(world, task.id) == 1
    path = f"remote/acme/{d.id}/bundle.bin"
    assert c.read_artifact(world.admin, world.project_id, path).data == BIG
    assert c.verify_audit().ok
