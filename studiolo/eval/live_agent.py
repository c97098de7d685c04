"""A scripted agent in its own process, over the HTTP client (`studiolo.client`), with its own
token: `python -m studiolo.eval.live_agent WORKSPACE` (STUDIOLO_URL, STUDIOLO_TOKEN and
STUDIOLO_PROJECT in the environment; the URL is its fault-injecting proxy).

`WORKSPACE/agent.json` names its tasks (ids, the paths, the historical bytes before and after
the change); it claims them in order, reads its targets, re-applies the change (git's file
merge), submits, waits for receipts, completes, and recovers from refusals as the in-process
agents do. A transport failure (a reset, a stall past the timeout) is retried with the same
request: a completion retried with its request id is answered from the ledger, never done
twice. It logs every answer to `WORKSPACE/log.jsonl`. Pinned as `LIVE_AGENT_VERSION`.
"""

from __future__ import annotations

import base64
import json
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import httpx

from studiolo._exceptions import CompletionRejected, StudioloError
from studiolo.client import Client
from studiolo.git.history import merge_file
from studiolo.settings import ClientSettings

__all__ = ["LIVE_AGENT_VERSION", "main"]

LIVE_AGENT_VERSION = "studiolo-eval-live-agent/1"
T = TypeVar("T")
_GIVE_UP = {"task_not_active", "attempt_superseded", "caller_not_attempt_owner", "task_not_found"}
MAX_ROUNDS = 8


class _Agent:
    def __init__(self, workspace: Path, config: dict[str, Any], client: Client) -> None:
        self.workspace = workspace
        self.config = config
        self.client = client
        self.name = str(config["name"])
        self.lease = float(config["lease"])
        self.log_file = (workspace / "log.jsonl").open("a", encoding="utf-8")
        self.transport_retries = 0

    def log(self, op: str, **fields: Any) -> None:
        self.log_file.write(json.dumps({"at": time.time(), "op": op, **fields}, sort_keys=True) + "\n")
        self.log_file.flush()

    def call(self, fn: Callable[[], T]) -> T:
        """`fn`, again after a transport failure (up to 8 times; the same request each time)."""
        for n in range(8):
            try:
                return fn()
            except httpx.TransportError as exc:
                self.transport_retries += 1
                self.log("transport-retry", error=type(exc).__name__, n=n)
                time.sleep(0.2 * (n + 1))
        return fn()

    # the loop -----------------------------------------------------------------
    def run(self) -> None:
        deadline = time.monotonic() + float(self.config["deadline_s"])
        todo = list(self.config["tasks"])
        while todo and time.monotonic() < deadline:
            for task in list(todo):
                state = self.call(partial(self.client.task, task["task_id"])).task.status
                if state in ("completed", "cancelled"):
                    todo.remove(task)
                    continue
                try:
                    attempt = self.call(partial(self.client.claim, task["task_id"], self.lease))
                except StudioloError:
                    continue
                self.log("claim", task=task["index"], attempt=attempt.id, fence=attempt.fence)
                self.work(task, attempt.id, attempt.fence)
                todo.remove(task)
                break
            else:
                time.sleep(0.5)
        self.log("done", transport_retries=self.transport_retries, left=[t["index"] for t in todo])

    def work(self, task: dict[str, Any], attempt_id: str, fence: int) -> None:
        contract = self.call(lambda: self.client.task(task["task_id"])).task.contract_hash
        candidate_id = ""
        for n in range(1, MAX_ROUNDS + 1):
            if not candidate_id:
                candidate_id = self.submit(task, attempt_id)
                if not candidate_id:
                    return
            evidence = self.wait_receipts(candidate_id, attempt_id, contract)
            if evidence is None:  # the suite failed on these bytes: later work may fix it
                time.sleep(2)
                candidate_id = ""
                continue
            failed = self.complete(task, n, attempt_id, fence, contract, candidate_id, evidence)
            if not failed:
                return
            reason = failed[0]
            if reason in _GIVE_UP:
                self.log("gave-up", task=task["index"], reason=reason)
                return
            if reason == "lease_expired":
                try:
                    again = self.call(lambda: self.client.claim(task["task_id"], self.lease))
                except StudioloError as refused:
                    self.log("gave-up", task=task["index"], reason=f"claim again: {refused.reason}")
                    return
                attempt_id, fence, candidate_id = again.id, again.fence, ""
                self.log("claim", task=task["index"], attempt=attempt_id, fence=fence)
            elif reason == "not_authorized":
                time.sleep(1.5)
            elif reason == "contract_mismatch":
                contract, candidate_id = (
                    self.call(lambda: self.client.task(task["task_id"])).task.contract_hash,
                    "",
                )
            else:  # stale bases or reads, evidence: rebase on the current tree
                candidate_id = ""
        self.log("gave-up", task=task["index"], reason="too many rounds")

    def submit(self, task: dict[str, Any], attempt_id: str) -> str:
        files: dict[str, str | None] = {}
        bases: dict[str, int] = {}
        for path in task["paths"]:
            revision, current = self.read(path)
            merged = merge_file(_bytes(task["before"][path]), current, _bytes(task["after"][path]))
            if merged is False or merged is True:
                self.log("gave-up", task=task["index"], reason=f"merge conflict on {path}")
                return ""
            bases[path] = revision
            files[path] = None if merged is None else self.call(partial(self.client.put_blob, merged)).digest
        try:
            cand = self.call(lambda: self.client.submit_candidate(attempt_id, files, bases))
        except StudioloError as refused:
            self.log("candidate-refused", task=task["index"], reason=refused.reason)
            return ""
        self.log("candidate", task=task["index"], candidate=cand.id, digest=cand.digest)
        return cand.id

    def read(self, path: str) -> tuple[int, bytes | None]:
        try:
            art = self.call(lambda: self.client.artifact(path))
        except StudioloError as missing:
            if missing.reason not in ("not_found", "artifact_not_found"):
                raise
            return 0, None
        if art.digest is None:
            return art.revision, None
        digest = art.digest
        return art.revision, self.call(lambda: self.client.get_blob(digest))

    def wait_receipts(self, candidate_id: str, attempt_id: str, contract: str) -> list[str] | None:
        """Passing receipt ids once every criterion has one; None when one failed."""
        for _ in range(600):
            self.heartbeat(attempt_id)
            answer = self.call(lambda: self.client.receipts(candidate_id))
            found = [r for r in answer if r.body.get("contract_hash") == contract]
            if any(r.body.get("result") == "fail" for r in found):
                return None
            passing = {str(r.body.get("criterion")): r.id for r in found if r.body.get("result") == "pass"}
            if passing:
                return sorted(passing.values())
            time.sleep(0.3)
        return []

    def heartbeat(self, attempt_id: str) -> None:
        try:
            beat = self.call(lambda: self.client.heartbeat(attempt_id, self.lease))
        except StudioloError:
            return
        self.log("heartbeat", attempt=attempt_id, deadline=beat.lease_deadline)

    def complete(
        self,
        task: dict[str, Any],
        n: int,
        attempt_id: str,
        fence: int,
        contract: str,
        candidate_id: str,
        evidence: list[str],
    ) -> list[str]:
        request_id = f"{self.name}-{task['index']}-{n}"
        start = time.perf_counter()
        try:
            done = self.call(
                lambda: self.client.complete(
                    task["task_id"],
                    request_id=request_id,
                    attempt_id=attempt_id,
                    fence=fence,
                    contract_hash=contract,
                    candidate_id=candidate_id,
                    evidence=evidence,
                )
            )
        except CompletionRejected as refused:
            self.log(
                "refused",
                task=task["index"],
                request=request_id,
                failed=list(refused.failed),
                ms=round((time.perf_counter() - start) * 1000, 3),
            )
            return list(refused.failed) or ["unknown"]
        except StudioloError as refused:
            self.log("refused", task=task["index"], request=request_id, failed=[refused.reason])
            return [refused.reason]
        self.log(
            "accepted",
            task=task["index"],
            request=request_id,
            replay=done.replay,
            ms=round((time.perf_counter() - start) * 1000, 3),
        )
        return []


def _bytes(value: str | None) -> bytes | None:
    return None if value is None else base64.b64decode(value)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m studiolo.eval.live_agent WORKSPACE", file=sys.stderr)
        return 2
    workspace = Path(args[0])
    config = json.loads((workspace / "agent.json").read_text(encoding="utf-8"))
    settings = ClientSettings.from_env()
    with Client(settings.url, settings.token, project=settings.project, timeout=10.0) as client:
        _Agent(workspace, config, client).run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
