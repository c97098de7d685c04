"""A small cluster for the scale tests and `bench/scale.py`: a seeded project in one ledger
database, and N `studiolo serve` replicas (separate OS processes) in front of it."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

from studiolo.core.model import Principal
from studiolo.faces.http.server import free_port
from studiolo.keys import public_key_text, sign
from studiolo.service import CandidateDraft, Coordinator
from studiolo.settings import Settings
from studiolo.store import Store

__all__ = ["Cluster", "Replica", "Seed", "ready_completions", "seed_another", "seed_project"]

WORKER_ACTIONS = ["read", "write", "claim", "complete"]
INPUT = "src/input.txt"


@dataclass
class Seed:
    """Everything a client process needs, as plain JSON-able values."""

    url: str
    project_id: str
    admin_token: str
    human_token: str
    verifier_id: str
    verifier_token: str
    verifier_key: str  # raw Ed25519 private key, base64
    agents: list[dict[str, str]]  # id, token, grant
    tasks: list[dict[str, Any]]  # id, target, contract_hash, hot
    replicas: list[str] = field(default_factory=list)

    def key(self) -> Ed25519PrivateKey:
        return Ed25519PrivateKey.from_private_bytes(base64.b64decode(self.verifier_key))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def seed_project(url: str, *, agents: int, tasks: int, hot: int) -> Seed:
    """Initialize the ledger and set up one project directly through the door."""
    store = Store(url)
    coord = Coordinator(store, Settings(database_url=url))
    issued = coord.initialize()
    assert issued is not None, "seed a fresh ledger"
    seed = _project(coord, issued.principal, issued.token, "scale", agents=agents, tasks=tasks, hot=hot)
    store.dispose()
    return seed


def seed_another(first: Seed, name: str, *, agents: int, tasks: int) -> Seed:
    """One more project, set up like `seed_project`'s, in the ledger `first` seeded."""
    store = Store(first.url)
    coord = Coordinator(store, Settings(database_url=first.url))
    admin = coord.authenticate(first.admin_token)
    seed = _project(coord, admin, first.admin_token, name, agents=agents, tasks=tasks, hot=0)
    store.dispose()
    return seed


def _project(
    coord: Coordinator, admin: Principal, admin_token: str, name: str, *, agents: int, tasks: int, hot: int
) -> Seed:
    pid = coord.create_project(admin, name).id
    key = Ed25519PrivateKey.generate()
    verifier = coord.add_principal(admin, pid, "ci", "verifier", public_key_text(key))
    human = coord.add_principal(admin, pid, "editor", "human")
    coord.grant(admin, pid, verifier.principal.id, ["read", "verify"], ["**"])
    coord.grant(admin, pid, human.principal.id, ["read", "write"], ["**"])
    coord.publish_policy(admin, pid, "Scale test: be quick.")
    coord.register_checker(admin, pid, "unit", "1", "command", {"argv": ["true"]}, [verifier.principal.id])
    people = []
    for n in range(agents):
        a = coord.add_principal(admin, pid, f"agent-{n}", "agent")
        g = coord.grant(admin, pid, a.principal.id, WORKER_ACTIONS, ["src/**"])
        people.append({"id": a.principal.id, "token": a.token, "grant": g.id})
    digest = coord.put_blob(human.principal, b"21\n")  # uploaded in the project that uses it
    coord.edit_artifact(human.principal, pid, INPUT, digest, 0)
    made = []
    for n in range(tasks):
        t = coord.create_task(admin, pid, f"task {n}", criteria={"tests": "unit@1"}, scope=["src/**"])
        made.append({"id": t.id, "target": f"src/t{n}.txt", "contract_hash": t.contract_hash, "hot": n < hot})
    raw = key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
    return Seed(
        url=coord.store.url,
        project_id=pid,
        admin_token=admin_token,
        human_token=human.token,
        verifier_id=verifier.principal.id,
        verifier_token=verifier.token,
        verifier_key=base64.b64encode(raw).decode(),
        agents=people,
        tasks=made,
    )


def ready_completions(seed: Seed) -> list[dict[str, Any]]:
    """Claimed (long lease), candidate submitted, receipt recorded: only the commit is left."""
    coord = Coordinator(Store(seed.url), Settings(database_url=seed.url))
    verifier = coord.authenticate(seed.verifier_token)
    key = seed.key()
    out = []
    for n, task in enumerate(seed.tasks):
        agent = seed.agents[n % len(seed.agents)]
        who = coord.authenticate(agent["token"])
        att = coord.claim(who, task["id"], 3600)
        digest = coord.put_blob(who, f"result {n}".encode())
        cand = coord.submit_candidate(
            who, att.id, CandidateDraft({task["target"]: digest}, {task["target"]: 0}, {INPUT: 1}, {})
        )
        body = {
            "task_id": task["id"],
            "attempt_id": att.id,
            "contract_hash": task["contract_hash"],
            "candidate_digest": cand.digest,
            "dependency_digest": cand.dependency_digest,
            "criterion": "tests",
            "checker": "unit@1",
            "result": "pass",
            "issued_at": int(time.time() * 1000),
            "issuer": verifier.id,
            "log_digest": None,
        }
        receipt = coord.submit_receipt(verifier, cand.id, body, sign(key, body))
        request = {
            "request_id": f"crash-{n}",
            "attempt_id": att.id,
            "fence": att.fence,
            "contract_hash": task["contract_hash"],
            "candidate_id": cand.id,
            "evidence": [receipt.id],
        }
        out.append({"task": task["id"], "token": agent["token"], "request": request})
    coord.store.dispose()
    return out


class Replica:
    """One `studiolo serve --database-url URL --port N` process."""

    def __init__(self, url: str, log: Path, port: int | None = None) -> None:
        self.db_url = url
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self._log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 120.0) -> None:
        self.launch()
        self.wait_healthy(timeout)

    def launch(self) -> None:
        argv = [sys.executable, "-c", "from studiolo.faces.cli import main; main()", "serve"]
        argv += ["--database-url", self.db_url, "--port", str(self.port)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("STUDIOLO_")}
        with self._log.open("ab") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)

    def wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"replica on {self.port} exited: {self._log.read_text()[-2000:]}")
            try:
                if httpx.get(self.base + "/healthz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"replica on {self.port} not healthy after {timeout}s")

    def kill(self) -> None:
        """kill -9: no shutdown, no flush, open transactions cut off mid-flight."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.kill()


class Cluster:
    """N replicas on one database; a context manager that always stops them."""

    def __init__(self, url: str, n: int, logdir: Path) -> None:
        self.replicas = [Replica(url, logdir / f"replica-{i}.log") for i in range(n)]

    @property
    def urls(self) -> list[str]:
        return [r.base for r in self.replicas]

    def __enter__(self) -> Cluster:
        try:
            for r in self.replicas:
                r.launch()  # in parallel: each one imports the app and upgrades the schema
            for r in self.replicas:
                r.wait_healthy(120.0)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        for r in self.replicas:
            r.stop()
