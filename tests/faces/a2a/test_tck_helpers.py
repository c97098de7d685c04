"""`scripts/a2a_tck.py`, the helpers the A2A TCK runs are made with (docs/a2a.md, "The A2A
TCK"): the proxy adds the token and the extension and streams events as they come; the bare
agent completes a task the SDK's way."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from studiolo.faces.http.server import free_port
from tests.faces.a2a.conftest import Live, work_task

_SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "a2a_tck.py"
_V1 = {"A2A-Version": "1.0"}


@contextmanager
def _script(*args: str) -> Iterator[str]:
    """The helper as it is run, in its own process (`--listen`/`--port` is the last pair)."""
    port = args[-1]
    url = f"http://127.0.0.1:{port}"
    with subprocess.Popen([sys.executable, str(_SCRIPT), *args], stderr=subprocess.PIPE, text=True) as proc:
        try:
            deadline = time.monotonic() + 30
            while True:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else proc.returncode
                assert time.monotonic() < deadline, "the helper did not start"
                try:
                    httpx.get(f"{url}/.well-known/agent-card.json", timeout=1)
                    break
                except httpx.TransportError:
                    time.sleep(0.05)
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def _rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}


def _message(text: str, skill: str | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
    if skill:
        msg["metadata"] = {"skill": skill}
    return {"message": msg}


def test_the_proxy_adds_the_token_and_streams_each_event_as_it_comes(live: Live, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(live.requester_token + "\n")
    with _script(
        "proxy", "--upstream", live.url, "--token-file", str(token_file), "--listen", str(free_port())
    ) as url:
        card = httpx.get(f"{url}/.well-known/agent-card.json")
        assert (
            card.status_code == 200
            and card.json() == httpx.get(f"{live.url}/.well-known/agent-card.json").json()
        )
        # no Authorization and no extension from the caller: the proxy adds both
        missing = httpx.post(f"{url}/a2a/jsonrpc/", json=_rpc("GetTask", {"id": "nope"}), headers=_V1)
        assert missing.status_code == 200 and missing.json()["error"]["code"] == -32001, missing.text
        body = _rpc("SendStreamingMessage", _message("stream through the proxy", live.skill))
        headers = {**_V1, "Accept": "text/event-stream"}
        with httpx.stream("POST", f"{url}/a2a/jsonrpc", json=body, headers=headers, timeout=30) as stream:
            events = (json.loads(line[5:]) for line in stream.iter_lines() if line.startswith("data:"))
            first = next(events)["result"]["task"]
            # the task is not done yet: a proxy that buffered the stream would deliver nothing now
            assert first["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"), first
            work_task(live, first["status"]["message"]["metadata"]["studioloTaskId"])
            states = [e["result"].get("statusUpdate", {}).get("status", {}).get("state") for e in events]
    assert states[-1] == "TASK_STATE_COMPLETED", states


def test_the_bare_agent_completes_with_an_echo() -> None:
    with _script("bare", "--port", str(free_port())) as url:
        card = httpx.get(f"{url}/.well-known/agent-card.json").json()
        jsonrpc = next(i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "JSONRPC")
        answer = httpx.post(
            f"{jsonrpc}/", json=_rpc("SendMessage", _message("ping")), headers=_V1, timeout=30
        )
        task = answer.json()["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", answer.text
        assert task["artifacts"][0]["parts"][0]["text"] == "ping"
