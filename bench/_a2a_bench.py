"""The price of the contract, as an A2A client sees it.

    python bench/a2a.py [--tasks 20] [--poll 0.02]   (this module runs through it)

Studiolo: the SDK's streaming JSON-RPC client sends a message; a Studiolo agent claims the
delegated task, submits a candidate, a verifier signs a passing receipt and the agent completes
(in-process calls on the Coordinator, in a thread started when the client sees SUBMITTED); the
client stops at COMPLETED, after every artifact and the signed manifest. Bare: the same client
against a bare a2a-sdk agent on the SDK's `DatabaseTaskStore` (SQLite, same disk) whose
executor just emits the same artifacts and COMPLETED. Tasks run one at a time; the figure is
the ratio of the medians. `--poll` is the A2A executor's ledger poll interval (the server's
default is 0.5 s). The last line is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from a2a.client import ClientConfig, create_client
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import DatabaseTaskStore
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Artifact,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from sqlalchemy.ext.asyncio import create_async_engine
from starlette.applications import Starlette

from studiolo.demo import setup_project
from studiolo.faces.a2a.mapping import MANIFEST_EXTENSION
from studiolo.faces.http.app import create_app
from studiolo.faces.http.server import free_port
from studiolo.keys import sign
from studiolo.service import CandidateDraft, Coordinator, make_request
from studiolo.settings import Settings
from studiolo.store import Store

DONE = TaskState.TASK_STATE_COMPLETED


class _Thread:
    def __init__(self, app: Any, port: int) -> None:
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> _Thread:
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


# Studiolo --------------------------------------------------------------------------------
def studiolo_setup(tmp: Path, poll: float) -> tuple[Any, str, dict[str, str], Any]:
    store = Store(Settings.sqlite_url(tmp / "ledger.db"))
    store.upgrade()
    coord = Coordinator(store)
    admin = coord.initialize()
    assert admin is not None
    demo = setup_project(coord, admin.principal)
    pid = demo.project_id
    requester = coord.add_principal(admin.principal, pid, "partner", "agent")
    coord.grant(admin.principal, pid, requester.principal.id, ["delegate"], ["src/**"])
    coord.define_intake(
        admin.principal, pid, "fix", description="", criteria={"tests": "unit@1"}, scope=["src/**"]
    )
    port = free_port()
    settings = Settings(database_url=store.url, public_url=f"http://127.0.0.1:{port}")
    app = create_app(coord, settings, event_poll_seconds=poll)
    headers = {"Authorization": f"Bearer {requester.token}", "A2A-Extensions": MANIFEST_EXTENSION}
    return _Thread(app, port), settings.public_url, headers, (demo, coord)


def work(demo: Any, coord: Coordinator, task_id: str, i: int) -> None:
    agent, ci = demo.who("agent-a"), demo.who("ci")
    task = coord.task_view(demo.admin, task_id).task
    attempt = coord.claim(agent, task_id)
    digest = coord.put_blob(agent, f"{i}\n".encode())
    draft = CandidateDraft(
        {"src/answer.txt": digest},
        {"src/answer.txt": coord.read_revision(agent, demo.project_id, "src/answer.txt")},
        {},
        {},
    )
    cand = coord.submit_candidate(agent, attempt.id, draft)
    body = {
        "task_id": task.id,
        "attempt_id": attempt.id,
        "contract_hash": task.contract_hash,
        "candidate_digest": cand.digest,
        "dependency_digest": cand.dependency_digest,
        "criterion": "tests",
        "checker": "unit@1",
        "result": "pass",
        "issued_at": int(time.time() * 1000),
        "issuer": ci.id,
        "log_digest": None,
    }
    receipt = coord.submit_receipt(ci, cand.id, body, sign(demo.verifier_key, body))
    req = make_request(
        request_id=f"bench-{i}",
        task_id=task.id,
        attempt_id=attempt.id,
        fence=attempt.fence,
        contract_hash=task.contract_hash,
        candidate_id=cand.id,
        evidence=[receipt.id],
    )
    coord.complete(agent, req)


# the bare SDK agent -------------------------------------------------------------------------
class BareExecutor(AgentExecutor):
    """Marks the task completed with the same artifacts (a file, a receipt, a manifest)."""

    def __init__(self, artifacts: list[Artifact]) -> None:
        self.artifacts = artifacts

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        tid, cid = context.task_id or "", context.context_id or ""
        await event_queue.enqueue_event(
            Task(id=tid, context_id=cid, status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED))
        )
        for a in self.artifacts:
            await event_queue.enqueue_event(
                TaskArtifactUpdateEvent(task_id=tid, context_id=cid, artifact=a, last_chunk=True)
            )
        await event_queue.enqueue_event(
            TaskStatusUpdateEvent(task_id=tid, context_id=cid, status=TaskStatus(state=DONE))
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def bare_setup(tmp: Path, artifacts: list[Artifact]) -> tuple[Any, str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    card = AgentCard(
        name="bare",
        description="bare a2a-sdk agent",
        version="1",
        supported_interfaces=[
            AgentInterface(url=f"{url}/jsonrpc", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["application/json"],
        skills=[AgentSkill(id="bare", name="bare", description="mark completed", tags=["bench"])],
    )
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp / 'bare.db'}")
    handler = DefaultRequestHandler(BareExecutor(artifacts), DatabaseTaskStore(engine), card)
    app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/jsonrpc")])
    return _Thread(app, port), url


# the client -------------------------------------------------------------------------------
async def run_client(
    url: str, headers: dict[str, str], n: int, on_task: Any
) -> tuple[list[float], list[Artifact]]:
    times: list[float] = []
    artifacts: list[Artifact] = []
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        client = await create_client(
            url, ClientConfig(streaming=True, httpx_client=http, supported_protocol_bindings=["JSONRPC"])
        )
        for i in range(n + 1):  # the first is a warm-up
            msg = Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=f"task {i}")])
            t0 = time.perf_counter()
            worker = None
            seen: list[Artifact] = []
            async for ev in client.send_message(SendMessageRequest(message=msg)):
                kind = ev.WhichOneof("payload")
                if kind == "task" and worker is None and on_task is not None:
                    worker = threading.Thread(target=on_task, args=(ev.task, i))
                    worker.start()
                if kind == "artifact_update":
                    seen.append(ev.artifact_update.artifact)
                if kind == "status_update" and ev.status_update.status.state == DONE:
                    break
            if i:
                times.append(time.perf_counter() - t0)
            if worker is not None:
                await asyncio.to_thread(worker.join)
            artifacts = seen
        await client.close()
    return times, artifacts


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--poll", type=float, default=0.02)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        server, url, headers, (demo, coord) = studiolo_setup(tmp, args.poll)

        def on_task(task: Task, i: int) -> None:
            studiolo_id = str(dict(task.status.message.metadata)["studiolo_task_id"])
            work(demo, coord, studiolo_id, i)

        with server:
            ours, artifacts = asyncio.run(run_client(url, headers, args.tasks, on_task))
        assert len(artifacts) == 3, artifacts  # the file, the receipt, the manifest
        bare_server, bare_url = bare_setup(tmp, artifacts)
        with bare_server:
            bare, _ = asyncio.run(run_client(bare_url, headers, args.tasks, None))
    s_med, b_med = statistics.median(ours) * 1000, statistics.median(bare) * 1000
    print(f"Studiolo (intake, claim, candidate, receipt, completion, artifacts): median {s_med:.1f} ms")
    print(f"bare a2a-sdk on DatabaseTaskStore (same artifacts):                 median {b_med:.1f} ms")
    print(f"tasks {args.tasks} each, one at a time; executor poll {args.poll * 1000:.0f} ms")
    print(
        json.dumps(
            {
                "a2a_contract_price_ratio": round(s_med / b_med, 2),
                "studiolo_ms": round(s_med, 1),
                "bare_sdk_ms": round(b_med, 1),
                "poll_ms": args.poll * 1000,
            }
        )
    )


if __name__ == "__main__":
    main()
