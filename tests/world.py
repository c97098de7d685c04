"""A small project in a fresh ledger: the fixture most tests start from."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from studiolo.clock import ManualClock
from studiolo.core.model import Attempt, Candidate, FileMode, Principal, Receipt, Task
from studiolo.keys import public_key_text, sign
from studiolo.service import CandidateDraft, Coordinator, make_request
from studiolo.service.completion import CompletionOutcome
from studiolo.settings import Settings
from studiolo.store import Store

FakeClock = ManualClock


@dataclass
class World:
    coord: Coordinator
    clock: Any
    admin: Principal
    project_id: str
    agent: Principal
    agent2: Principal
    human: Principal
    verifier: Principal
    verifier_key: Ed25519PrivateKey
    grants: dict[str, str] = field(default_factory=dict)
    counter: int = 0

    # setup helpers -----------------------------------------------------------
    def new_task(self, title: str = "double the number", **kw: Any) -> Task:
        kw.setdefault("criteria", {"tests": "unit@1"})
        kw.setdefault("scope", ["src/**", "docs/**"])
        return self.coord.create_task(self.admin, self.project_id, title, **kw)

    def put(self, data: bytes) -> str:
        return self.coord.put_blob(self.agent, data)

    def edit(self, path: str, data: bytes | None, who: Principal | None = None) -> int:
        digest = self.put(data) if data is not None else None
        rev = self.coord.read_revision(self.admin, self.project_id, path)
        art = self.coord.edit_artifact(who or self.human, self.project_id, path, digest, rev)
        return art.revision

    def candidate(
        self,
        attempt: Attempt,
        files: dict[str, bytes | None],
        deps: dict[str, int] | None = None,
        collections: dict[str, int] | None = None,
        bases: dict[str, int] | None = None,
        who: Principal | None = None,
        modes: dict[str, FileMode] | None = None,
    ) -> Candidate:
        digests = {p: (self.put(b) if b is not None else None) for p, b in files.items()}
        if bases is None:
            bases = {p: self.coord.read_revision(self.admin, self.project_id, p) for p in files}
        draft = CandidateDraft(digests, bases, deps or {}, collections or {}, modes or {})
        return self.coord.submit_candidate(who or self.agent, attempt.id, draft)

    def receipt(
        self,
        cand: Candidate,
        result: str = "pass",
        criterion: str = "tests",
        checker: str = "unit@1",
        contract_hash: str | None = None,
        key: Ed25519PrivateKey | None = None,
        **override: Any,
    ) -> Receipt:
        task = self.coord.task_view(self.admin, cand.task_id).task
        body = {
            "task_id": cand.task_id,
            "attempt_id": cand.attempt_id,
            "contract_hash": contract_hash or task.contract_hash,
            "candidate_digest": cand.digest,
            "dependency_digest": cand.dependency_digest,
            "criterion": criterion,
            "checker": checker,
            "result": result,
            "issued_at": int(self.clock() * 1000),
            "issuer": self.verifier.id,
            "log_digest": None,
        }
        body.update(override)
        sig = sign(key or self.verifier_key, body)
        return self.coord.submit_receipt(self.verifier, cand.id, body, sig)

    def complete(
        self,
        task: Task,
        attempt: Attempt,
        cand: Candidate,
        evidence: list[str],
        who: Principal | None = None,
        request_id: str | None = None,
        contract_hash: str | None = None,
        fence: int | None = None,
    ) -> CompletionOutcome:
        self.counter += 1
        req = make_request(
            request_id=request_id or f"req-{self.counter}",
            task_id=task.id,
            attempt_id=attempt.id,
            fence=attempt.fence if fence is None else fence,
            contract_hash=contract_hash or task.contract_hash,
            candidate_id=cand.id,
            evidence=evidence,
        )
        return self.coord.complete(who or self.agent, req)


def build_world(tmp: Path, clock: Any = None, url: str | None = None) -> World:
    clock = clock or FakeClock()
    # The service clock (not the database's) so that tests can move time on every back-end.
    store = Store(url or Settings.sqlite_url(tmp / "ledger.db"), clock=clock, clock_source="service")
    coord = Coordinator(store, Settings(database_url=store.url), clock=clock)
    issued = coord.initialize()
    assert issued is not None
    return add_project(coord, issued.principal, clock, "demo")


def add_project(coord: Coordinator, admin: Principal, clock: Any, name: str) -> World:
    """A project with two agents, an editor and a verifier, in the ledger `coord` serves."""
    project = coord.create_project(admin, name)
    pid = project.id
    vkey = Ed25519PrivateKey.generate()
    agent = coord.add_principal(admin, pid, "agent-a", "agent").principal
    agent2 = coord.add_principal(admin, pid, "agent-b", "agent").principal
    human = coord.add_principal(admin, pid, "editor", "human").principal
    verifier = coord.add_principal(admin, pid, "ci", "verifier", public_key_text(vkey)).principal
    world = World(coord, clock, admin, pid, agent, agent2, human, verifier, vkey)
    worker_actions = ["write", "claim", "complete"]
    for label, who in (("agent", agent), ("agent2", agent2)):
        world.grants[label + "_read"] = coord.grant(admin, pid, who.id, ["read"], ["**"]).id
        world.grants[label] = coord.grant(admin, pid, who.id, worker_actions, ["src/**", "docs/**"]).id
    world.grants["human"] = coord.grant(admin, pid, human.id, ["read", "write", "observe"], ["**"]).id
    world.grants["verifier"] = coord.grant(admin, pid, verifier.id, ["read", "verify"], ["**"]).id
    coord.publish_policy(admin, pid, "Be careful. Write tests.")
    coord.register_checker(admin, pid, "unit", "1", "command", {"argv": ["true"]}, [verifier.id])
    world.edit("src/input.txt", b"21\n")
    world.edit("src/answer.txt", b"0\n")
    return world
