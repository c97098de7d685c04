"""Two helpers for running the A2A TCK (a2aproject/a2a-tck, branch 1.0-dev) against Studiolo and
against a bare a2a-sdk agent in the same sitting (docs/a2a.md, "The A2A TCK").

    python scripts/a2a_tck.py proxy --listen 8781 --upstream http://127.0.0.1:8780 --token-file T
    python scripts/a2a_tck.py worker --url http://127.0.0.1:8780 --state-dir .studiolo
    python scripts/a2a_tck.py bare --port 8790

`proxy` is a loopback reverse proxy that adds what an honest Studiolo client sends and the TCK
cannot: `Authorization: Bearer <token>` and the manifest extension in `A2A-Extensions`. It
streams both ways (server-sent events pass through as they arrive) and changes nothing else;
Studiolo must be started with `STUDIOLO_PUBLIC_URL` set to the proxy's URL, so the signed card's
interfaces point at the proxy. `worker` is the demo project's agent and verifier working its
queue (`studiolo run`'s demo tokens and verifier key): it claims every open task, submits one
file, signs a passing receipt and completes, so a delegated task reaches COMPLETED as it would
with real agents (without it every stream stays open, WORKING, and the TCK waits). `bare` is
the SDK's own agent: the default request handler, an in-memory task store, and an executor
that completes every task with an echo of its message.
Neither is part of the package.
"""

from __future__ import annotations

import argparse
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

MANIFEST_EXTENSION = "https://studiolo.dev/a2a/extensions/artifact-manifest/v1"
_HOP = {"host", "content-length", "connection", "keep-alive", "transfer-encoding", "te", "upgrade"}


def proxy_app(upstream: str, token: str, extension: str | None = MANIFEST_EXTENSION) -> Starlette:
    client = httpx.AsyncClient(base_url=upstream.rstrip("/"), timeout=httpx.Timeout(60.0, connect=5.0))

    async def forward(request: Request) -> StreamingResponse:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        headers["authorization"] = f"Bearer {token}"
        if extension:
            asked = [e.strip() for e in headers.get("a2a-extensions", "").split(",") if e.strip()]
            headers["a2a-extensions"] = ", ".join(dict.fromkeys([*asked, extension]))
        body = await request.body()
        target = httpx.URL(path=request.url.path, query=request.url.query.encode())
        sent = client.build_request(request.method, target, headers=headers, content=body)
        answer = await client.send(sent, stream=True)

        async def relay() -> AsyncIterator[bytes]:
            async for chunk in answer.aiter_raw():
                yield chunk

        kept = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP}
        return StreamingResponse(
            relay(), status_code=answer.status_code, headers=kept, background=BackgroundTask(answer.aclose)
        )

    methods = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]
    return Starlette(routes=[Route("/{path:path}", forward, methods=methods)])


def bare_app(port: int) -> Any:
    """The a2a-sdk's agent with nothing of Studiolo: what the TCK is compared against."""
    from a2a.helpers.proto_helpers import new_task
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part, TaskState

    class Echo(AgentExecutor):
        async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
            task_id, context_id = context.task_id or "", context.context_id or ""
            if context.current_task is None:  # the SDK wants the Task before any update
                history = [context.message] if context.message else []
                await event_queue.enqueue_event(
                    new_task(task_id, context_id, TaskState.TASK_STATE_SUBMITTED, history=history)
                )
            updater = TaskUpdater(event_queue, task_id, context_id)
            text = " ".join(p.text for p in context.message.parts if p.text) if context.message else ""
            await updater.start_work()
            await updater.add_artifact(parts=[Part(text=text or "(empty)")], artifact_id=str(uuid.uuid4()))
            await updater.complete()

        async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
            await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()

    base = f"http://127.0.0.1:{port}"
    card = AgentCard(
        name="bare a2a-sdk agent",
        description="the SDK's default handler and an echo executor",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=base, protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=f"{base}/rest", protocol_binding="HTTP+JSON", protocol_version="1.0"),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=[AgentSkill(id="echo", name="echo", description="echoes the message", tags=["echo"])],
    )
    handler = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card)
    routes: list[Any] = list(create_agent_card_routes(card))  # before the REST binding's /{tenant}
    routes += create_jsonrpc_routes(handler, "/")  # the TCK posts to the interface URL + "/"
    routes += create_rest_routes(handler, path_prefix="/rest")
    return Starlette(routes=routes)


def work(url: str, state_dir: Path, poll: float = 0.2) -> None:
    """Complete every open task of the demo project, one at a time, until interrupted."""
    import json
    import time

    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    from studiolo.client import Client

    saved = json.loads((state_dir / "demo-tokens.json").read_text())
    tokens = {name: p["token"] for name, p in saved["principals"].items()}
    key = load_pem_private_key(Path(saved["verifier_key_file"]).read_bytes(), None)
    with Client(url, tokens["agent-a"]) as agent, Client(url, tokens["ci"]) as verifier:
        while True:
            for summary in agent.tasks("open", project=saved["project_id"]):
                task_id = summary.id
                try:
                    attempt = agent.claim(task_id)
                    task = agent.task(task_id).task
                    path = f"src/tck/{task_id}.txt"
                    digest = agent.put_blob(b"hello\n").digest
                    cand = agent.submit_candidate(attempt.id, {path: digest}, {path: 0})
                    criteria = list(task.contract.criteria)
                    now = int(time.time() * 1000)
                    receipts = [
                        verifier.sign_receipt(cand.id, c, "pass", key, issued_at_ms=now).id for c in criteria
                    ]
                    agent.complete(
                        task_id,
                        request_id=f"{attempt.id}:{cand.id}",
                        attempt_id=attempt.id,
                        fence=attempt.fence,
                        contract_hash=task.contract_hash,
                        candidate_id=cand.id,
                        evidence=receipts,
                    )
                except Exception as exc:  # a cancel or another worker got there first: next task
                    print(f"{task_id}: {exc}", flush=True)
            time.sleep(poll)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("proxy")
    p.add_argument("--listen", type=int, required=True)
    p.add_argument("--upstream", required=True)
    p.add_argument("--token-file", type=Path, required=True, help="a file holding the bearer token")
    p.add_argument("--no-extension", action="store_true", help="do not add the manifest extension")
    w = sub.add_parser("worker")
    w.add_argument("--url", required=True)
    w.add_argument("--state-dir", type=Path, required=True)
    b = sub.add_parser("bare")
    b.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    if args.command == "proxy":
        token = args.token_file.read_text().strip()
        app = proxy_app(args.upstream, token, None if args.no_extension else MANIFEST_EXTENSION)
        uvicorn.run(app, host="127.0.0.1", port=args.listen, log_level="warning")
    elif args.command == "worker":
        work(args.url, args.state_dir)
    else:
        uvicorn.run(bare_app(args.port), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
