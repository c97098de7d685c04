"""The soak's load: client processes, each an asyncio loop of many clients over kept-alive
connections (one `httpx.AsyncClient` per process), that fail over to another replica at once
when one does not answer, and log every answer they get.

A worker claims a task, then while it holds the attempt mostly heartbeats and reads (its
attempt, its task, the target's revision) and now and then finishes: a blob, a candidate, a
receipt signed by the verifier and the completion (retried with the same request id on
another replica when no answer came back; sometimes replayed once answered). Before each
completion is sent the worker tells the fault loop (a UDP datagram `["s", replica, rid]`,
and `["e", rid]` once it has an answer or gave that replica up), so that the fault loop can
kill the replica while that completion is in flight. One chaos client per process revokes
and re-grants grants, reassigns tasks and edits inputs and targets. Event-stream readers
(a process of their own) follow the project's events from the start, resume after the last event id
they saw on another replica when a stream breaks, and log every sequence number.

Every answer is a JSONL line: `op`, `outcome` (`ok`, `refused` with the `reason`,
`no_answer`; for completions `accepted`, `replay`, `rejected`, `no_answer`), the replica
index `r`, when it was sent (`at`) and how long it took (`ms`), and what it told (attempt id
and fence, candidate, receipt, completion id and signature). The checker (bench/soakcheck.py)
holds the ledger to them.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import multiprocessing
import random
import socket
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from studiolo.keys import sign
from tests.scale.cluster import INPUT, WORKER_ACTIONS, Seed

__all__ = ["SoakPlan", "run_load"]

_LEASES = (0.5, 30.0, 30.0, 60.0, 60.0, 60.0, 60.0, 60.0, 60.0, 60.0)  # a few expire mid-work
_DOWN_FOR = 0.5  # seconds a replica that did not answer is skipped by this process
_TRIES = 12  # replicas tried for one operation before it is given up
_GIVE_UP = 120.0  # seconds a completion is retried (same request id) before it is given up


@dataclass(frozen=True)
class SoakPlan:
    processes: int
    clients: int  # workers per process (each process also has one chaos client)
    readers: int  # event-stream readers, all in process 0
    seconds: float
    finish: float = 0.12  # per step while holding an attempt: the chance of finishing it
    seed: int = 1
    signal_port: int = 0  # the fault loop's UDP port (0: nobody listens)
    drain: float = 20.0  # seconds readers keep reading after the load, to reach the end

    @property
    def total_clients(self) -> int:
        return self.processes * (self.clients + 1) + self.readers


def run_load(seed: Seed, plan: SoakPlan, logdir: Path) -> list[Path]:
    """Run the plan in `plan.processes` spawned processes; the JSONL logs they wrote."""
    ctx = multiprocessing.get_context("spawn")
    procs = []
    for p in range(plan.processes + (1 if plan.readers else 0)):  # the readers in a process of their own
        out = logdir / f"soak-{p}.jsonl"
        proc = ctx.Process(target=_process_main, args=(seed.to_json(), plan, p, str(out)), daemon=True)
        procs.append((proc, out))
        proc.start()
    for proc, _ in procs:
        proc.join(timeout=plan.seconds + plan.drain + 300)
        if proc.is_alive():
            proc.kill()
            raise RuntimeError("a load process did not finish")
    return [out for _, out in procs]


def _process_main(seed_json: dict[str, Any], plan: SoakPlan, index: int, out: str) -> None:
    asyncio.run(_process(Seed(**seed_json), plan, index, Path(out)))


async def _process(seed: Seed, plan: SoakPlan, index: int, out: Path) -> None:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    timeout = httpx.Timeout(60.0, connect=5.0)
    with out.open("w") as fh:
        async with httpx.AsyncClient(limits=limits, timeout=timeout) as http:
            net = _Net(seed, http, fh, plan.signal_port)
            deadline = time.monotonic() + plan.seconds
            if index == plan.processes:
                await asyncio.gather(
                    *(_Reader(net, seed, k).run(deadline + plan.drain) for k in range(plan.readers))
                )
                net.log(type="cpu", cpu_s=time.process_time())
                return
            jobs = []
            for w in range(plan.clients):
                n = index * plan.clients + w
                worker = _Worker(net, seed, n, random.Random(plan.seed * 1_000_003 + n), plan)
                jobs.append(worker.run(deadline))
            chaos = _Chaos(net, seed, index, plan, random.Random(plan.seed * 7_000_003 + index))
            jobs.append(chaos.run(deadline))
            await asyncio.gather(*jobs)
        net.close()
        net.log(type="cpu", cpu_s=time.process_time())


class _Net:
    """The replicas as this process sees them: which answered lately, and the log."""

    def __init__(self, seed: Seed, http: httpx.AsyncClient, fh: Any, signal_port: int) -> None:
        self.bases, self.http, self.fh = seed.replicas, http, fh
        self.down_until = [0.0] * len(self.bases)
        self.project = quote(seed.project_id, safe="")
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM) if signal_port else None
        self.signal_to = ("127.0.0.1", signal_port)

    def log(self, **rec: Any) -> None:
        self.fh.write(json.dumps(rec, separators=(",", ":")) + "\n")

    def signal(self, *msg: Any) -> None:
        if self.sock is not None:
            self.sock.sendto(json.dumps(msg).encode(), self.signal_to)

    def order(self, home: int) -> list[int]:
        """Replicas to try, from `home` on, the ones that answered lately first."""
        n = len(self.bases)
        ring = [(home + i) % n for i in range(n)]
        now = time.monotonic()
        return [r for r in ring if self.down_until[r] <= now] + [r for r in ring if self.down_until[r] > now]

    async def call(
        self, op: str, home: int, method: str, path: str, token: str, body: Any = None, **extra: Any
    ) -> tuple[int, httpx.Response] | None:
        """Send to one replica after another until one answers (None if none did); log every try."""
        headers = {"Authorization": f"Bearer {token}"}
        kw: dict[str, Any] = {"headers": headers}
        if isinstance(body, bytes):
            kw["content"], headers["Content-Type"] = body, "application/octet-stream"
        elif body is not None:
            kw["json"] = body
        for attempt in range(_TRIES):
            ring = self.order(home)
            r = ring[0]
            if self.down_until[r] > time.monotonic() and attempt >= len(ring):
                await asyncio.sleep(0.05)  # every replica failed lately: not a busy loop
            at, t0 = time.time(), time.perf_counter()
            try:
                resp = await self.http.request(method, self.bases[r] + path, **kw)
            except httpx.TransportError as exc:
                self.down_until[r] = time.monotonic() + _DOWN_FOR
                self.log(
                    op=op, outcome="no_answer", r=r, at=at, ms=_ms(t0), error=type(exc).__name__, **extra
                )
                home = r + 1
                continue
            if resp.status_code >= 400:
                reason = _reason(resp)
                self.log(op=op, outcome="refused", reason=reason, r=r, at=at, ms=_ms(t0), **extra)
                return r, resp
            self.log(op=op, outcome="ok", r=r, at=at, ms=_ms(t0), **extra, **_told(op, resp))
            return r, resp
        return None

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()


def _ok(got: tuple[int, httpx.Response] | None) -> httpx.Response | None:
    """The answer, if there was one and it said yes."""
    return got[1] if got is not None and got[1].status_code < 400 else None


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 2)


def _reason(resp: httpx.Response) -> str:
    try:
        return str(resp.json().get("reason", resp.status_code))
    except ValueError:
        return str(resp.status_code)


def _told(op: str, resp: httpx.Response) -> dict[str, Any]:
    """What an answer told, for the checker: ids, fences, deadlines."""
    if op in ("claim", "heartbeat", "reassign", "read_attempt"):
        a = resp.json()
        return {"attempt": a["id"], "task": a["task_id"], "fence": a["fence"], "status": a["status"]}
    if op == "candidate":
        return {"candidate": resp.json()["id"]}
    if op == "receipt":
        return {"receipt": resp.json()["id"]}
    if op == "blob":
        return {"digest": resp.json()["digest"]}
    if op == "read_task":
        return {"task": resp.json()["task"]["id"], "task_status": resp.json()["task"]["status"]}
    return {}


class _Worker:
    def __init__(self, net: _Net, seed: Seed, n: int, rng: random.Random, plan: SoakPlan) -> None:
        self.net, self.seed, self.n, self.rng, self.plan = net, seed, n, rng, plan
        self.agent = seed.agents[n % len(seed.agents)]
        self.token = self.agent["token"]
        self.home = n % len(seed.replicas)
        width = plan.processes * plan.clients
        self.mine = [t for i, t in enumerate(seed.tasks) if i % width == n]  # mostly its own tasks
        self.hot = [t for t in seed.tasks if t["hot"]]
        self.done: set[str] = set()

    async def run(self, deadline: float) -> None:
        held: tuple[dict[str, Any], dict[str, Any]] | None = None
        while time.monotonic() < deadline:
            if held is None:
                task = self.pick()
                if task is None:
                    return
                att = await self.claim(task)
                held = (task, att) if att is not None else None
                continue
            task, att = held
            x = self.rng.random()
            if x < self.plan.finish:
                await self.finish(task, att)
                held = None
            elif x < 0.55:
                held = await self.heartbeat(task, att)
            else:
                await self.read(task, att)

    def pick(self) -> dict[str, Any] | None:
        pool = self.hot if self.rng.random() < 0.05 else self.mine
        open_ = [t for t in pool if t["id"] not in self.done]
        if not open_:
            open_ = [t for t in self.seed.tasks if t["id"] not in self.done]
        return self.rng.choice(open_) if open_ else None

    async def claim(self, task: dict[str, Any]) -> dict[str, Any] | None:
        path = f"/v1/tasks/{task['id']}/attempts"
        got = await self.net.call(
            "claim",
            self.home,
            "POST",
            path,
            self.token,
            {"lease_seconds": self.rng.choice(_LEASES)},
            c=self.n,
        )
        if got is None:
            return None
        self.home = got[0]
        if got[1].status_code >= 400:
            if _reason(got[1]) == "task_not_active":
                self.done.add(task["id"])
            return None
        return dict(got[1].json())

    async def heartbeat(
        self, task: dict[str, Any], att: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]] | None:
        path = f"/v1/attempts/{att['id']}/heartbeat"
        got = await self.net.call(
            "heartbeat", self.home, "POST", path, self.token, {"lease_seconds": 60.0}, c=self.n
        )
        return (task, att) if _ok(got) is not None else None  # refused (the lease is gone) or unanswered

    async def read(self, task: dict[str, Any], att: dict[str, Any]) -> None:
        x = self.rng.random()
        if x < 0.5:
            await self.net.call(
                "read_attempt", self.home, "GET", f"/v1/attempts/{att['id']}", self.token, c=self.n
            )
        elif x < 0.8:
            await self.revision(task["target"])
        else:
            await self.net.call(
                "read_task", self.home, "GET", f"/v1/tasks/{task['id']}", self.token, c=self.n
            )

    async def revision(self, path: str) -> int | None:
        url = f"/v1/projects/{self.net.project}/artifacts/{quote(path, safe='').replace('.', '%2E')}"
        got = await self.net.call("read_artifact", self.home, "GET", url, self.token, c=self.n, file=path)
        if got is not None and got[1].status_code == 404:
            return 0
        ok = _ok(got)
        return int(ok.json()["revision"]) if ok is not None else None

    async def finish(self, task: dict[str, Any], att: dict[str, Any]) -> None:
        base = await self.revision(task["target"])
        got = await self.net.call(
            "blob", self.home, "POST", "/v1/blobs", self.token, f"{self.n} {uuid.uuid4()}".encode(), c=self.n
        )
        ok = _ok(got)
        if ok is None:
            return
        digest = ok.json()["digest"]
        body = {"files": {task["target"]: digest}, "bases": {task["target"]: base or 0}, "file_deps": {}}
        if self.rng.random() < 0.05:
            body["file_deps"] = {INPUT: 0}  # a stale read now and then: the predicate refuses it
        cand = await self.net.call(
            "candidate", self.home, "POST", f"/v1/attempts/{att['id']}/candidates", self.token, body, c=self.n
        )
        made = _ok(cand)
        if made is None:
            return
        receipt = await self.receipt(task, att, made.json())
        if receipt is not None:
            await self.complete(task, att, made.json()["id"], receipt)

    async def receipt(self, task: dict[str, Any], att: dict[str, Any], cand: dict[str, Any]) -> str | None:
        body = {
            "task_id": task["id"],
            "attempt_id": att["id"],
            "contract_hash": task["contract_hash"],
            "candidate_digest": cand["digest"],
            "dependency_digest": cand["dependency_digest"],
            "criterion": "tests",
            "checker": "unit@1",
            "result": "pass" if self.rng.random() < 0.97 else "fail",
            "issued_at": int(time.time() * 1000),
            "issuer": self.seed.verifier_id,
            "log_digest": None,
        }
        signed = {"body": body, "signature": sign(_key(self.seed), body)}
        path = f"/v1/candidates/{cand['id']}/receipts"
        got = await self.net.call(
            "receipt", self.home, "POST", path, self.seed.verifier_token, signed, c=self.n
        )
        ok = _ok(got)
        return str(ok.json()["id"]) if ok is not None else None

    async def complete(self, task: dict[str, Any], att: dict[str, Any], cand: str, receipt: str) -> None:
        request = {
            "request_id": f"req-{uuid.uuid4()}",
            "attempt_id": att["id"],
            "fence": att["fence"],
            "contract_hash": task["contract_hash"],
            "candidate_id": cand,
            "evidence": [receipt],
        }
        first = await self.send(task, request)
        if first and self.rng.random() < 0.1:
            await self.send(task, request)  # an identical replay: must return the original receipt

    async def send(self, task: dict[str, Any], request: dict[str, Any]) -> bool:
        """The completion, on one replica after another until one answers (same request id)."""
        rid, url = request["request_id"], f"/v1/tasks/{task['id']}/complete"
        headers = {"Authorization": f"Bearer {self.token}"}
        give_up = time.monotonic() + _GIVE_UP
        for attempt in itertools.count():
            if time.monotonic() > give_up:
                break
            ring = self.net.order(self.home)
            r = ring[0]
            if self.net.down_until[r] > time.monotonic() and attempt >= len(ring):
                await asyncio.sleep(0.1)
            self.net.signal("s", r, rid)
            at, t0 = time.time(), time.perf_counter()
            try:
                resp = await self.net.http.post(self.net.bases[r] + url, json=request, headers=headers)
            except httpx.TransportError as exc:
                self.net.signal("e", rid)
                self.net.down_until[r] = time.monotonic() + _DOWN_FOR
                self.net.log(
                    op="complete", rid=rid, task=task["id"], outcome="no_answer", r=r, at=at, ms=_ms(t0),
                    error=type(exc).__name__, c=self.n,
                )  # fmt: skip
                self.home = r + 1
                continue
            self.net.signal("e", rid)
            self.done.add(task["id"])
            self.log_completion(task, rid, r, at, t0, resp)
            return resp.status_code < 400
        return False

    def log_completion(
        self, task: dict[str, Any], rid: str, r: int, at: float, t0: float, resp: httpx.Response
    ) -> None:
        common = {
            "op": "complete",
            "rid": rid,
            "task": task["id"],
            "r": r,
            "at": at,
            "ms": _ms(t0),
            "c": self.n,
        }
        if resp.status_code >= 400:
            problem = resp.json()
            self.net.log(
                **common, outcome="rejected", reason=problem.get("reason"), failed=problem.get("failed")
            )
            return
        out = resp.json()
        replay = resp.headers.get("Idempotent-Replay") == "true"
        self.net.log(
            **common,
            outcome="replay" if replay else "accepted",
            completion=out["id"],
            signature=out["signature"],
            commit_version=out["commit_version"],
        )


_KEYS: dict[str, Any] = {}


def _key(seed: Seed) -> Any:
    if seed.verifier_key not in _KEYS:
        _KEYS[seed.verifier_key] = seed.key()
    return _KEYS[seed.verifier_key]


class _Chaos:
    """Revokes and re-grants its agents' grants, reassigns tasks, edits inputs and targets."""

    def __init__(self, net: _Net, seed: Seed, index: int, plan: SoakPlan, rng: random.Random) -> None:
        self.net, self.seed, self.rng, self.n = net, seed, rng, -1 - index
        self.agents = [dict(a) for i, a in enumerate(seed.agents) if i % plan.processes == index]

    async def run(self, deadline: float) -> None:
        moves = [self.revoke, self.revoke, self.reassign, self.reassign, self.edit_input, self.edit_target]
        while time.monotonic() < deadline:
            await self.rng.choice(moves)()
            await asyncio.sleep(self.rng.uniform(0.3, 1.0))

    async def revoke(self) -> None:
        if not self.agents:
            return
        agent, admin = self.rng.choice(self.agents), self.seed.admin_token
        await self.net.call("revoke_grant", 0, "POST", f"/v1/grants/{agent['grant']}/revoke", admin, c=self.n)
        await asyncio.sleep(self.rng.uniform(0.0, 0.2))
        body = {"principal_id": agent["id"], "actions": WORKER_ACTIONS, "scope": ["src/**"]}
        got = await self.net.call(
            "grant", 1, "POST", f"/v1/projects/{self.net.project}/grants", admin, body, c=self.n
        )
        ok = _ok(got)
        if ok is not None:
            agent["grant"] = ok.json()["id"]

    async def reassign(self) -> None:
        task, agent = self.rng.choice(self.seed.tasks), self.rng.choice(self.seed.agents)
        body = {"principal_id": agent["id"], "lease_seconds": self.rng.choice(_LEASES)}
        path = f"/v1/tasks/{task['id']}/reassign"
        await self.net.call("reassign", 2, "POST", path, self.seed.admin_token, body, c=self.n)

    async def edit_input(self) -> None:
        await self.edit(INPUT)

    async def edit_target(self) -> None:
        await self.edit(self.rng.choice(self.seed.tasks)["target"])

    async def edit(self, path: str) -> None:
        token = self.seed.human_token
        url = f"/v1/projects/{self.net.project}/artifacts/{quote(path, safe='').replace('.', '%2E')}"
        got = await self.net.call("read_artifact", 3, "GET", url, token, c=self.n, file=path)
        ok = _ok(got)
        base = int(ok.json()["revision"]) if ok is not None else 0
        blob = await self.net.call(
            "blob", 3, "POST", "/v1/blobs", token, f"edit {uuid.uuid4()}".encode(), c=self.n
        )
        made = _ok(blob)
        if made is not None:
            body = {"digest": made.json()["digest"], "base_revision": base}
            await self.net.call("edit", 3, "PUT", url, token, body, c=self.n, file=path)


class _Reader:
    """Follows the project's event stream from the start, across replica kills: a broken
    stream is resumed after the last event id seen, on the next replica. Logs every seq."""

    def __init__(self, net: _Net, seed: Seed, k: int) -> None:
        self.net, self.k = net, k
        self.token = seed.admin_token
        self.home = k % len(seed.replicas)

    async def run(self, until: float) -> None:
        last, breaks = 0, 0
        url = f"/v1/projects/{self.net.project}/events/stream"
        headers = {"Authorization": f"Bearer {self.token}"}
        timeout = httpx.Timeout(5.0, read=15.0)
        while time.monotonic() < until:
            r = self.net.order(self.home)[0]
            params = {"after": last, "timeout": max(1.0, min(30.0, until - time.monotonic()))}
            seqs: list[int] = []
            try:
                async with self.net.http.stream(
                    "GET", self.net.bases[r] + url, params=params, headers=headers, timeout=timeout
                ) as resp:
                    if resp.status_code >= 400:
                        await resp.aread()
                        self.net.log(
                            op="stream",
                            k=self.k,
                            outcome="refused",
                            reason=_reason(resp),
                            r=r,
                            at=time.time(),
                        )
                        await asyncio.sleep(0.5)
                        continue
                    async for line in resp.aiter_lines():
                        if line.startswith("data:"):
                            seq = int(json.loads(line[5:])["seq"])
                            seqs.append(seq)
                            last = seq
            except (httpx.TransportError, ValueError, KeyError) as exc:
                breaks += 1
                self.net.down_until[r] = time.monotonic() + _DOWN_FOR
                self.net.log(
                    op="stream",
                    k=self.k,
                    outcome="broken",
                    error=type(exc).__name__,
                    r=r,
                    at=time.time(),
                    seqs=seqs,
                )
                self.home = r + 1
                if not seqs:
                    await asyncio.sleep(0.1)  # nothing came: no busy loop while every replica is down
                continue
            self.net.log(op="stream", k=self.k, outcome="ok", r=r, at=time.time(), seqs=seqs)
