"""The evaluation's ledger: one real project, set up once through the door; every cell runs
on a branch of it (a savepoint rolled back at the end, `studiolo.study.engine.branch`), so
every cell starts from the same state without importing the repository again.

Principals: the admin (the authority), two agents (`alpha`, `beta`), a human editor and the
verifier `ci` (an Ed25519 key derived from the seed).  Each agent holds `read` on the project
and a separate `write`/`claim`/`complete` grant the authority may revoke.  The checker
`suite@1` is the repository's own test suite (`command` kind); the base tree is imported in
one audited edit; one task per historical commit, scope = the paths it changed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from studiolo.clock import ManualClock
from studiolo.core.model import FileMode, Principal, Task
from studiolo.eval.workload import Workload, suite_argv
from studiolo.keys import public_key_text
from studiolo.service import Coordinator
from studiolo.settings import Settings
from studiolo.store import Store
from studiolo.study.engine.branch import BranchStore, open_branches

__all__ = ["AGENTS", "CRITERION", "LEASE_SECONDS", "START", "SeededIds", "World", "open_world"]

START = 1_800_000_000.0
LEASE_SECONDS = 60.0
AGENTS = ("alpha", "beta")
CRITERION = {"suite": "suite@1"}
POLICY_V1 = "Behaviour v1: make the commit's change; run the suite; declare what you read."


class SeededIds:
    """Deterministic ids (the `IdSource` protocol): a digest of a namespace and a counter.
    Unique within one ledger as long as namespaces differ."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.n = 0

    def new(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}_{hashlib.sha256(f'{self.namespace}:{self.n}'.encode()).hexdigest()[:32]}"

    def token(self) -> str:
        return "stl_" + self.new("tok")


@dataclass(frozen=True)
class World:
    store: BranchStore
    settings: Settings
    clock: ManualClock
    project_id: str
    admin: Principal
    agents: dict[str, Principal]
    work_grants: dict[str, str]  # agent name → its revocable write/claim/complete grant
    human: Principal
    verifier: Principal
    verifier_key: Ed25519PrivateKey
    tasks: tuple[Task, ...]
    checker_argv: tuple[str, ...]

    def coordinator(self, namespace: str, disabled: frozenset[str] = frozenset()) -> Coordinator:
        from studiolo.core.reasons import Reason

        reasons = frozenset(Reason(r) for r in disabled)
        return Coordinator(
            self.store, self.settings, clock=self.clock, ids=SeededIds(namespace), disabled_checks=reasons
        )


def verifier_key(seed: int) -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(
        hashlib.sha256(f"studiolo-eval-verifier:{seed}".encode()).digest()
    )


@contextmanager
def open_world(directory: Path, workload: Workload, seed: int) -> Iterator[World]:
    """A fresh ledger in `directory`, set up; yields the world on its branch store."""
    clock = ManualClock(START)
    base = Store(Settings.sqlite_url(directory / "eval.db"), clock=clock)
    settings = Settings(database_url=base.url)
    try:
        world = _set_up(base, settings, clock, workload, seed)  # committed: the cells' common start
        with open_branches(base, clock) as store:
            yield replace(world, store=store)
    finally:
        base.engine.dispose()


def _set_up(base: Store, settings: Settings, clock: ManualClock, workload: Workload, seed: int) -> World:
    door = Coordinator(base, settings, clock=clock, ids=SeededIds(f"world:{seed}"))
    issued = door.initialize()
    assert issued is not None, "a fresh ledger"
    admin = issued.principal
    pid = door.create_project(admin, "eval").id
    agents, work_grants = {}, {}
    for name in AGENTS:
        agent = door.add_principal(admin, pid, name, "agent").principal
        door.grant(admin, pid, agent.id, ["read"], ["**"])
        work_grants[name] = door.grant(admin, pid, agent.id, ["write", "claim", "complete"], ["**"]).id
        agents[name] = agent
    human = door.add_principal(admin, pid, "editor", "human").principal
    door.grant(admin, pid, human.id, ["read", "write"], ["**"])
    key = verifier_key(seed)
    verifier = door.add_principal(admin, pid, "ci", "verifier", public_key_text(key)).principal
    door.grant(admin, pid, verifier.id, ["read", "verify"], ["**"])
    door.publish_policy(admin, pid, POLICY_V1)
    argv = suite_argv(set(workload.base_files))
    door.register_checker(admin, pid, "suite", "1", "command", {"argv": argv, "timeout": 300}, [verifier.id])
    files = {p: (door.put_blob(admin, data), FileMode.REGULAR) for p, data in workload.base_files.items()}
    door.import_tree(admin, pid, files, {"commit": workload.base, "ref": "base"})
    tasks = tuple(
        door.create_task(
            admin,
            pid,
            f"{t.commit[:10]} {t.title}"[:300],
            criteria=CRITERION,
            scope=list(t.paths),
            description=f"Make the change of commit {t.commit} (its diff against {t.parent}).",
        )
        for t in workload.tasks
    )
    return World(
        store=base,  # type: ignore[arg-type]  # replaced by the branch store before any cell runs
        settings=settings,
        clock=clock,
        project_id=pid,
        admin=admin,
        agents=agents,
        work_grants=work_grants,
        human=human,
        verifier=verifier,
        verifier_key=key,
        tasks=tasks,
        checker_argv=tuple(argv),
    )
