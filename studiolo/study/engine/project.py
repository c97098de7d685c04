"""The engine's world: one real project in a fresh SQLite ledger, set up through the door.

The same small world as the model (report §6.1), made of real objects: an admin, the
submitting worker, a replacement agent, a human editor (the other writer) and an admitted
verifier with an Ed25519 key; the checkers ``double@1`` and ``integer@1``; the input
``work/input.txt`` holding 21 at revision 1 and the target ``work/answer.txt`` (absent until
someone writes it); the task "double the number", pinned to policy version 1 and claimed by
the worker.  Two more tasks exist only for the negative controls: another task (whose
contract the wrong-task control cites) and a task pinned to the integer-only checker (the
inadequate-checker control), also claimed by the worker.

The worker holds a ``read`` grant on everything and a separate ``write``/``claim``/``complete``
grant on ``work/**``; ``revoke`` revokes the second only, so a revoked worker can still see
its task (and is answered ``not_authorized``, not ``task_not_found``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from studiolo.clock import ManualClock
from studiolo.core.model import Attempt, Principal, Task
from studiolo.keys import new_private_key, public_key_text
from studiolo.service import Coordinator
from studiolo.settings import Settings
from studiolo.store import Store

__all__ = [
    "EDITED_BYTES",
    "INPUT",
    "LEASE_SECONDS",
    "POLICY_V2",
    "SCOPE",
    "TARGET",
    "EngineProject",
    "open_project",
]

SCOPE = "work/**"
INPUT = "work/input.txt"
TARGET = "work/answer.txt"
INITIAL_INPUT = b"21"
EDITED_BYTES = b"edited by another writer"
LEASE_SECONDS = 600.0
START = 1_800_000_000.0
POLICY_V1 = "Behaviour v1: double the number; write nothing else."
POLICY_V2 = "Behaviour v2: new defaults for tasks created from now on."


@dataclass(frozen=True)
class EngineProject:
    """Everything a study run needs to know about its ledger (ids and keys are random)."""

    store: Store
    settings: Settings
    clock: ManualClock
    project_id: str
    admin: Principal
    worker: Principal
    replacement: Principal
    human: Principal
    verifier: Principal
    verifier_key: Ed25519PrivateKey
    worker_write_grant: str
    task: Task
    attempt: Attempt
    other_task: Task
    integer_task: Task
    integer_attempt: Attempt
    edited_digest: str


def open_project(directory: Path) -> EngineProject:
    """Create the ledger in ``directory`` and set the project up (committed transactions)."""
    clock = ManualClock(START)
    store = Store(Settings.sqlite_url(directory / "engine.db"), clock=clock)
    settings = Settings(database_url=store.url)
    coord = Coordinator(store, settings, clock=clock)
    issued = coord.initialize()
    if issued is None:
        raise RuntimeError(f"{directory} already holds a ledger")
    admin = issued.principal
    pid = coord.create_project(admin, "study").id
    key = new_private_key()
    worker = coord.add_principal(admin, pid, "worker", "agent").principal
    replacement = coord.add_principal(admin, pid, "replacement", "agent").principal
    human = coord.add_principal(admin, pid, "editor", "human").principal
    verifier = coord.add_principal(admin, pid, "verifier", "verifier", public_key_text(key)).principal
    coord.grant(admin, pid, worker.id, ["read"], ["**"])
    write_grant = coord.grant(admin, pid, worker.id, ["write", "claim", "complete"], [SCOPE])
    coord.grant(admin, pid, replacement.id, ["read", "write", "claim", "complete"], [SCOPE])
    coord.grant(admin, pid, human.id, ["read", "write"], ["**"])
    coord.grant(admin, pid, verifier.id, ["read", "verify"], ["**"])
    coord.publish_policy(admin, pid, POLICY_V1)
    for name in ("double", "integer"):
        coord.register_checker(admin, pid, name, "1", "builtin", {}, [verifier.id])
    coord.edit_artifact(human, pid, INPUT, coord.put_blob(human, INITIAL_INPUT), 0)
    task = _task(coord, admin, pid, "double the number", "double@1")
    other = _task(coord, admin, pid, "another task", "double@1")
    integer = _task(coord, admin, pid, "double the number (integer check only)", "integer@1")
    return EngineProject(
        store=store,
        settings=settings,
        clock=clock,
        project_id=pid,
        admin=admin,
        worker=worker,
        replacement=replacement,
        human=human,
        verifier=verifier,
        verifier_key=key,
        worker_write_grant=write_grant.id,
        task=task,
        attempt=coord.claim(worker, task.id, LEASE_SECONDS),
        other_task=other,
        integer_task=integer,
        integer_attempt=coord.claim(worker, integer.id, LEASE_SECONDS),
        edited_digest=coord.put_blob(human, EDITED_BYTES),
    )


def _task(coord: Coordinator, admin: Principal, pid: str, title: str, checker: str) -> Task:
    return coord.create_task(admin, pid, title, criteria={"answer": checker}, scope=[SCOPE])
