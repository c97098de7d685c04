"""The fleet's agents and projects: made through the door on the benchmark's ledger (`Fleet`), or
made up for the generator's self-check against the null server (`NullFleet`)."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from studiolo._exceptions import Conflict
from studiolo.core.model import Principal
from studiolo.keys import public_key_text
from studiolo.service import Coordinator
from studiolo.store import Store, Tx, volatile
from studiolo.store.gate import Gate

T = TypeVar("T")
LEASE = 120.0


class _SetupStore(Store):
    """Setup writes skip their fsync (a benchmark fixture, not the measured path)."""

    def write(self, fn: Callable[[Tx], T], gate: Gate | None = None) -> T:
        return super().write(volatile(fn), gate)


@dataclass
class Project:
    id: str
    verifier_id: str
    verifier_token: str
    key: Ed25519PrivateKey


@dataclass
class Agent:
    n: int
    token: str
    project: Project
    task: dict[str, Any] = field(default_factory=dict)  # task_id, contract_hash
    attempt: dict[str, Any] = field(default_factory=dict)  # id, fence
    spare: list[dict[str, Any]] = field(default_factory=list)
    done: int = 0


@dataclass
class Fleet:
    coord: Coordinator
    admin: Principal
    per_project: int
    agents: list[Agent] = field(default_factory=list)
    projects: list[Project] = field(default_factory=list)

    def grow(self, n: int) -> None:
        while len(self.agents) < n:
            if len(self.agents) % self.per_project == 0:
                self.projects.append(self._project(len(self.projects)))
            self.agents.append(self._agent(len(self.agents), self.projects[-1]))
        for a in self.agents[:n]:
            while len(a.spare) < 1:
                a.spare.append(self._task(a))
            self._renew(a)

    def _renew(self, a: Agent) -> None:
        """Renew the agent's lease before a step; an agent whose attempt lapsed (it stopped in an
        earlier step, or setup took longer than its lease) claims a new task, so that every step
        starts with every agent live."""
        me = self.coord.authenticate(a.token)
        try:
            self.coord.heartbeat(me, a.attempt["id"], LEASE)
        except Conflict:
            a.task = self._task(a)
            att = self.coord.claim(me, a.task["task_id"], LEASE)
            a.attempt = {"id": att.id, "fence": att.fence}

    def last_event(self) -> int:
        """The audit's last sequence number: where the agents' event streams start."""
        return self.coord.store.read(lambda tx: tx.audit.last()[0])

    def _project(self, k: int) -> Project:
        c, admin = self.coord, self.admin
        pid = c.create_project(admin, f"fleet-{k}").id
        key = Ed25519PrivateKey.generate()
        ci = c.add_principal(admin, pid, "ci", "verifier", public_key_text(key))
        c.grant(admin, pid, ci.principal.id, ["read", "verify"], ["**"])
        c.publish_policy(admin, pid, "Keep the lease alive.")
        c.register_checker(admin, pid, "unit", "1", "command", {"argv": ["true"]}, [ci.principal.id])
        return Project(pid, ci.principal.id, ci.token, key)

    def _agent(self, n: int, p: Project) -> Agent:
        c, admin = self.coord, self.admin
        issued = c.add_principal(admin, p.id, f"agent-{n}", "agent")
        c.grant(admin, p.id, issued.principal.id, ["read", "claim"], ["**"])
        c.grant(admin, p.id, issued.principal.id, ["write", "complete"], [f"src/a{n}/**"])
        agent = Agent(n, issued.token, p)
        agent.task = self._task(agent)
        att = c.claim(issued.principal, agent.task["task_id"], LEASE)
        agent.attempt = {"id": att.id, "fence": att.fence}
        return agent

    def _task(self, a: Agent) -> dict[str, Any]:
        t = self.coord.create_task(
            self.admin, a.project.id, f"work of agent {a.n}", criteria={"tests": "unit@1"}, scope=["src/**"]
        )
        return {"task_id": t.id, "contract_hash": t.contract_hash}


def _made_up(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(13)}"  # as long as the ledger's ids


@dataclass
class NullFleet:
    """Agents with made-up ids and tokens, for the null server (which checks none of them)."""

    per_project: int
    agents: list[Agent] = field(default_factory=list)

    def grow(self, n: int) -> None:
        while len(self.agents) < n:
            k = len(self.agents)
            if k % self.per_project == 0:
                key = Ed25519PrivateKey.generate()
                project = Project(_made_up("prj"), _made_up("prn"), secrets.token_urlsafe(32), key)
            else:
                project = self.agents[-1].project
            agent = Agent(k, secrets.token_urlsafe(32), project)
            agent.task = {"task_id": _made_up("tsk"), "contract_hash": secrets.token_hex(32)}
            agent.attempt = {"id": _made_up("att"), "fence": 1}
            self.agents.append(agent)
        for a in self.agents[:n]:
            while len(a.spare) < 1:
                a.spare.append({"task_id": _made_up("tsk"), "contract_hash": secrets.token_hex(32)})

    def last_event(self) -> int:
        return 0
