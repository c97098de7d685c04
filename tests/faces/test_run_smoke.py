"""The README's `make run` (= `studiolo run`) as a subprocess: it serves, and one demo task
can be completed through the CLI with the tokens and verifier key it leaves behind; the
README's tour runs in bash exactly as written (only the port differs), isolation on."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from studiolo.faces.a2a.card import STATUS_SKILL
from studiolo.faces.http.server import free_port

STUDIOLO = [sys.executable, "-c", "from studiolo.faces.cli import main; main()"]
README = Path(__file__).resolve().parents[2] / "README.md"


def _wait_healthy(url: str, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[0]
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError("studiolo run did not become healthy")


def test_make_run_serves_the_demo_and_a_task_completes(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("STUDIOLO_")}
    env["STUDIOLO_STATE_DIR"] = str(tmp_path / "cli-state")  # claims never land in ~/.local/state
    proc = subprocess.Popen(
        [*STUDIOLO, "run", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_healthy(url, proc)
        saved = json.loads((tmp_path / ".studiolo" / "demo-tokens.json").read_text())
        assert saved["url"] == url and (tmp_path / "studiolo.db").is_file()
        agent = saved["principals"]["agent-a"]["token"]
        verifier = saved["principals"]["ci"]["token"]
        _mcp_answers(url, agent)  # the served app's lifespan runs the MCP session manager
        _a2a_answers(url, saved)

        def cli(token: str, *args: str) -> Any:
            run = subprocess.run(
                [*STUDIOLO, "--url", url, "--token", token, *args, "--json"],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert run.returncode == 0, (args, run.stdout, run.stderr)
            return json.loads(run.stdout)

        task = saved["tasks"]["Double the number"]
        attempt = cli(agent, "claim", task)
        assert (tmp_path / "cli-state" / "claims" / f"{attempt['id']}.json").is_file()
        cli(agent, "checkout", "work", "--prefix", "src")
        (tmp_path / "work" / "src" / "answer.txt").write_text("42\n")
        cand = cli(agent, "submit", attempt["id"], "work")
        verify = subprocess.run(
            [
                *STUDIOLO,
                "--url",
                url,
                "--token",
                verifier,
                "verifier",
                "run",
                "--once",
                "--key",
                saved["verifier_key_file"],
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )  # the seeded checker really runs: answer must be twice the input
        assert verify.returncode == 0 and "pass" in verify.stdout, (verify.stdout, verify.stderr)
        done = cli(agent, "complete", task, "--candidate", cand["id"])
        assert done["completion"]["revisions"] == {"src/answer.txt": 2}
        assert cli(agent, "task", "show", task)["task"]["fact"] == "accepted"
    finally:
        proc.send_signal(signal.SIGINT)
        output = proc.communicate(timeout=30)[0]
    assert "demo-tokens.json" in output and url in output


def _mcp_answers(url: str, token: str) -> None:
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}"}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "orient", "arguments": {}}}
    r = httpx.post(f"{url}/mcp", json=call, headers=headers, timeout=30)
    assert r.status_code == 200, r.text
    assert r.json()["result"]["structuredContent"]["principal"]["name"] == "agent-a"
    assert httpx.post(f"{url}/mcp", json=call, headers={"Accept": headers["Accept"]}).status_code == 401


def _a2a_answers(url: str, saved: dict[str, Any]) -> None:
    """The demo's Agent Card lists its one template and the status skill, and the requester
    can hand work in."""
    card = httpx.get(f"{url}/.well-known/agent-card.json", timeout=30).json()
    skill = f"{saved['project_id']}/greeting"
    assert [s["id"] for s in card["skills"]] == [skill, STATUS_SKILL] and card["signatures"]
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "say hello"}]},
            "configuration": {"returnImmediately": True},
        },
    }
    headers = {
        "Authorization": f"Bearer {saved['principals']['requester']['token']}",
        "A2A-Version": "1.0",
        "A2A-Extensions": card["capabilities"]["extensions"][0]["uri"],
    }
    answer = httpx.post(f"{url}/a2a/jsonrpc", json=body, headers=headers, timeout=30).json()
    assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED", answer


@contextlib.contextmanager
def _studiolo_run(cwd: Path, env: dict[str, str]) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [*STUDIOLO, "run", "--port", str(port)], cwd=cwd, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_healthy(url, proc)
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)


def readme_block(heading: str) -> str:
    """The first ```sh block under a README heading."""
    section = README.read_text().split(heading, 1)[1]
    return section.split("```sh\n", 1)[1].split("```", 1)[0]


def tour_env(tmp_path: Path) -> dict[str, str]:
    """A `studiolo` on the tour's PATH ($PWD/.venv/bin) and an environment without STUDIOLO_*."""
    shim = tmp_path / ".venv" / "bin" / "studiolo"
    shim.parent.mkdir(parents=True)
    entry = "from studiolo.faces.cli import main; main()"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -c "{entry}" "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STUDIOLO_")}
    env["STUDIOLO_STATE_DIR"] = str(tmp_path / "cli-state")  # claims never land in ~/.local/state
    return env


def run_tour(tmp_path: Path, env: dict[str, str], tour: str) -> subprocess.CompletedProcess[str]:
    """The tour in bash against `studiolo run` (only the port differs from the README)."""
    with _studiolo_run(tmp_path, env) as url:
        script = tour.replace("http://127.0.0.1:8765", url)
        return subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", script],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )


def test_the_readme_tour_runs_as_written(tmp_path: Path) -> None:
    env = tour_env(tmp_path)
    tour = readme_block("## A 60-second tour")
    assert "http://127.0.0.1:8765" in tour and "verifier run --once" in tour
    run = run_tour(tmp_path, env, tour)
    assert run.returncode == 0, (run.stdout, run.stderr)
    assert "1 item(s) processed" in run.stdout and "accepted: cmp_" in run.stdout
    assert "fact accepted (still current: True)" in run.stdout
