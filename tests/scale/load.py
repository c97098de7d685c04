"""Load for the scale tests: client processes, each with threads that act as workers (claim,
heartbeat, candidate, receipt, completion, identical replays) or as chaos (revocations,
reassignments, direct edits). Every completion answer a client receives is logged, so the
checker can compare what clients were told with what the ledger recorded."""

from __future__ import annotations

import json
import multiprocessing
import random
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from studiolo import StudioloError
from studiolo.client import Client, Completed
from studiolo.keys import sign
from tests.scale.cluster import INPUT, WORKER_ACTIONS, Seed

__all__ = ["LoadPlan", "run_load"]

_LEASES = (0.5, 10.0, 30.0, 60.0, 60.0)  # some expire mid-iteration, most do not
_OVERTIME = 3
_BACKOFF = 0.05  # seconds a client waits after a connection failed


@dataclass(frozen=True)
class LoadPlan:
    processes: int
    workers_per_process: int
    chaos_per_process: int
    seconds: float
    max_iterations: int  # per worker thread: the run is bounded by count as well as time
    seed: int = 1

    @property
    def clients(self) -> int:
        return self.processes * (self.workers_per_process + self.chaos_per_process)


def run_load(seed: Seed, plan: LoadPlan, logdir: Path) -> tuple[list[dict[str, Any]], Counter[str]]:
    """Run the plan in `plan.processes` spawned processes; return completion answers, stats."""
    ctx = multiprocessing.get_context("spawn")
    procs = []
    for p in range(plan.processes):
        out = logdir / f"load-{p}.jsonl"
        args = (seed.to_json(), plan, p, str(out))
        procs.append((ctx.Process(target=_process_main, args=args, daemon=True), out))
    for proc, _ in procs:
        proc.start()
    for proc, _ in procs:
        proc.join(timeout=plan.seconds + 180)
        if proc.is_alive():
            proc.kill()
            raise RuntimeError("a load process did not finish")
    answers: list[dict[str, Any]] = []
    stats: Counter[str] = Counter()
    for _, out in procs:
        for line in out.read_text().splitlines():
            rec = json.loads(line)
            if rec["type"] == "stats":
                stats.update(rec["stats"])
            else:
                answers.append(rec)
    return answers, stats


def _process_main(seed_json: dict[str, Any], plan: LoadPlan, index: int, out: str) -> None:
    seed = Seed(**seed_json)
    log = _Log(Path(out))
    actors: list[_Worker | _Chaos] = []
    for w in range(plan.workers_per_process):
        n = index * plan.workers_per_process + w
        agent = seed.agents[n % len(seed.agents)]
        actors.append(_Worker(seed, agent, random.Random(plan.seed * 1_000_003 + n), log))
    for c in range(plan.chaos_per_process):
        n = index * plan.chaos_per_process + c
        mine = [a for i, a in enumerate(seed.agents) if i % (plan.processes * plan.chaos_per_process) == n]
        actors.append(_Chaos(seed, mine, random.Random(plan.seed * 7_000_003 + n), log))
    deadline = time.monotonic() + plan.seconds  # after the (slow) setup of every client
    threads = [threading.Thread(target=a.run, args=(deadline, plan)) for a in actors]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log.close()


class _Log:
    def __init__(self, path: Path) -> None:
        self._fh = path.open("w")
        self._lock = threading.Lock()
        self.stats: Counter[str] = Counter()

    def answer(self, **rec: Any) -> None:
        with self._lock:
            self._fh.write(json.dumps({"type": "answer", **rec}) + "\n")
            self._fh.flush()

    def count(self, key: str) -> None:
        with self._lock:
            self.stats[key] += 1

    def close(self) -> None:
        self._fh.write(json.dumps({"type": "stats", "stats": dict(self.stats)}) + "\n")
        self._fh.close()


def _clients(seed: Seed, token: str, transport: httpx.HTTPTransport) -> list[Client]:
    """One client per replica, over one shared transport (building one is slow: TLS setup)."""
    return [Client(b, token, project=seed.project_id, timeout=60, transport=transport) for b in seed.replicas]


class _Worker:
    def __init__(self, seed: Seed, agent: dict[str, str], rng: random.Random, log: _Log) -> None:
        self.seed, self.agent, self.rng, self.log = seed, agent, rng, log
        self.transport = httpx.HTTPTransport()
        self.me = _clients(seed, agent["token"], self.transport)
        self.verifier = _clients(seed, seed.verifier_token, self.transport)
        self.key = seed.key()
        self.hot = [t for t in seed.tasks if t["hot"]]
        self.cold = [t for t in seed.tasks if not t["hot"]]
        self.done: set[str] = set()
        self.replayed = False

    def any(self, clients: list[Client]) -> Client:
        return self.rng.choice(clients)  # every request may land on another replica

    def run(self, deadline: float, plan: LoadPlan) -> None:
        overtime = _OVERTIME  # on a slow machine, a worker without an acceptance tries a bit longer
        for _ in range(plan.max_iterations):
            if time.monotonic() > deadline:
                if self.replayed or overtime == 0:
                    break
                overtime -= 1
            task = self.pick()
            if task is None:
                break
            try:
                self.iteration(task)
            except StudioloError as err:
                self.log.count(f"error.{err.reason}")
                if err.reason == "task_not_active":
                    self.done.add(task["id"])
            except httpx.TransportError:
                self.log.count("transport_error")
                time.sleep(_BACKOFF)  # that replica is down (bench/soak.py kills them): not a busy loop
        self.transport.close()

    def pick(self) -> dict[str, Any] | None:
        pool = self.hot if self.rng.random() < 0.3 else self.cold
        open_ = [t for t in pool if t["id"] not in self.done] or [
            t for t in self.seed.tasks if t["id"] not in self.done
        ]
        return self.rng.choice(open_) if open_ else None

    def iteration(self, task: dict[str, Any]) -> None:
        att = self.any(self.me).claim(task["id"], self.rng.choice(_LEASES))
        self.log.count("claim")
        if self.rng.random() < 0.3:
            att = self.any(self.me).heartbeat(att.id, self.rng.choice(_LEASES))
            self.log.count("heartbeat")
        c = self.any(self.me)
        base, dep = c.revision(task["target"]), c.revision(INPUT)
        blob = c.put_blob(f"{self.agent['id']} {uuid.uuid4()}".encode())
        deps = {INPUT: dep} if self.rng.random() < 0.5 else {}  # half read the shared input
        cand = self.any(self.me).submit_candidate(
            att.id, {task["target"]: blob.digest}, {task["target"]: base}, deps
        )
        self.log.count("candidate")
        body = {
            "task_id": task["id"],
            "attempt_id": att.id,
            "contract_hash": task["contract_hash"],
            "candidate_digest": cand.digest,
            "dependency_digest": cand.dependency_digest,
            "criterion": "tests",
            "checker": "unit@1",
            "result": "pass" if self.rng.random() < 0.95 else "fail",
            "issued_at": int(time.time() * 1000),
            "issuer": self.seed.verifier_id,
            "log_digest": None,
        }
        receipt = self.any(self.verifier).post_receipt(cand.id, body, sign(self.key, body))
        self.log.count("receipt")
        request = {
            "request_id": f"req-{uuid.uuid4()}",
            "attempt_id": att.id,
            "fence": att.fence,
            "contract_hash": task["contract_hash"],
            "candidate_id": cand.id,
            "evidence": [receipt.id],
        }
        self.complete(task, request)

    def complete(self, task: dict[str, Any], request: dict[str, Any]) -> None:
        first = self.send(task, request)
        if first is not None and (not self.replayed or self.rng.random() < 0.3):
            self.replayed = True
            self.send(task, request)  # an identical replay: must return the original receipt

    def send(self, task: dict[str, Any], request: dict[str, Any]) -> Completed | None:
        for _ in range(3):  # a lost answer is retried with the same request id
            at, start = time.time(), time.perf_counter()
            try:
                out = self.any(self.me).complete(task["id"], **request)
            except StudioloError as err:
                self.log.count(f"complete.{err.reason}")
                rid = request["request_id"]
                ms = (time.perf_counter() - start) * 1000
                self.log.answer(rid=rid, task=task["id"], outcome="rejected", failed=err.failed, at=at, ms=ms)
                if err.reason == "task_not_active":
                    self.done.add(task["id"])
                return None
            except httpx.TransportError:
                self.log.count("complete.transport_error")
                time.sleep(_BACKOFF)
                continue
            self.done.add(task["id"])
            self.log.count("complete.replay" if out.replay else "complete.accepted")
            self.log.answer(
                rid=request["request_id"],
                task=task["id"],
                outcome="replay" if out.replay else "accepted",
                completion=out.completion.id,
                signature=out.completion.signature,
                commit_version=out.completion.commit_version,
                at=at,  # when it was sent, and how long its answer took (bench/soak.py)
                ms=(time.perf_counter() - start) * 1000,
            )
            return out
        return None


class _Chaos:
    """Revokes and re-grants its agents' grants, reassigns tasks, edits inputs and targets."""

    def __init__(self, seed: Seed, agents: list[dict[str, str]], rng: random.Random, log: _Log) -> None:
        self.seed, self.agents, self.rng, self.log = seed, [dict(a) for a in agents], rng, log
        self.transport = httpx.HTTPTransport()
        self.admin = _clients(seed, seed.admin_token, self.transport)
        self.human = _clients(seed, seed.human_token, self.transport)

    def run(self, deadline: float, _plan: LoadPlan) -> None:
        moves = [self.revoke, self.revoke, self.reassign, self.reassign, self.edit_input, self.edit_target]
        while time.monotonic() < deadline:
            move = self.rng.choice(moves)
            try:
                move()
                self.log.count(f"chaos.{move.__name__}")
            except StudioloError as err:
                self.log.count(f"chaos.error.{err.reason}")
            except httpx.TransportError:
                self.log.count("chaos.transport_error")
            time.sleep(self.rng.uniform(0.3, 1.0))
        self.transport.close()

    def revoke(self) -> None:
        if not self.agents:
            return
        agent = self.rng.choice(self.agents)
        admin = self.rng.choice(self.admin)
        admin.revoke_grant(agent["grant"])
        time.sleep(self.rng.uniform(0.0, 0.2))
        agent["grant"] = self.rng.choice(self.admin).grant(agent["id"], WORKER_ACTIONS, ["src/**"]).id

    def reassign(self) -> None:
        task = self.rng.choice(self.seed.tasks)
        agent = self.rng.choice(self.seed.agents)
        self.rng.choice(self.admin).reassign(task["id"], agent["id"], self.rng.choice(_LEASES))

    def edit_input(self) -> None:
        self._edit(INPUT)

    def edit_target(self) -> None:
        self._edit(self.rng.choice(self.seed.tasks)["target"])

    def _edit(self, path: str) -> None:
        human = self.rng.choice(self.human)
        digest = human.put_blob(f"edit {uuid.uuid4()}".encode()).digest
        human.edit_artifact(path, digest, human.revision(path))
