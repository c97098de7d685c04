"""The mechanisms compared: the study's engine doors (`studiolo.study.engine.doors`), the
same switches of the real completion transaction, run on this workload.

`preflight` evaluates the full transaction on a branch and rolls it back (the verdict it would
give now); only `split-preflight` decides from it, publishing at commit with every predicate
off.  `latest-policy` also rejects unless the task's pinned policy is the newest default.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from studiolo._exceptions import CompletionRejected, StudioloError
from studiolo.core.model import Principal
from studiolo.core.predicate import CompletionRequest
from studiolo.eval.world import World
from studiolo.service import Coordinator
from studiolo.study.engine.doors import Door, door

__all__ = ["MECHANISMS", "Decision", "Mechanism"]

MECHANISMS = (
    "full-atomic",
    "split-preflight",
    "attempt-lease-only",
    "no-input-revision",
    "latest-policy",
    "report-only",
)


@dataclass(frozen=True)
class Decision:
    accepted: bool
    failed: tuple[str, ...]  # every failing predicate, or the harness rule that refused
    seconds: float  # wall time of the door's transaction(s)


class Mechanism:
    def __init__(self, world: World, mechanism_id: str, namespace: str) -> None:
        self.world = world
        self.spec: Door = door(mechanism_id)
        self.full = world.coordinator(f"{namespace}:preflight")
        self.commit_door = world.coordinator(
            f"{namespace}:commit", frozenset(r.value for r in self.spec.commit_disabled)
        )
        self._preflight: dict[str, tuple[str, ...]] = {}  # request id → the cached verdict

    def preflight(self, caller: Principal, request: CompletionRequest) -> tuple[str, ...]:
        """The full transaction's verdict now (rolled back): () when it would accept."""
        with self.world.store.branch():
            verdict = _attempt(self.full, caller, request)
        self._preflight[request.request_id] = verdict
        return verdict

    def commit(self, caller: Principal, request: CompletionRequest, door_view: Coordinator) -> Decision:
        start = time.perf_counter()
        if self.spec.reuse_preflight:
            cached = self._preflight.get(request.request_id, ("no preflight",))
            if cached:
                return Decision(False, tuple(f"preflight: {r}" for r in cached), time.perf_counter() - start)
        if self.spec.latest_policy and not _pinned_is_latest(door_view, caller, request):
            return Decision(False, ("pinned policy is not the latest",), time.perf_counter() - start)
        failed = _attempt(self.commit_door, caller, request)
        return Decision(not failed, failed, time.perf_counter() - start)


def _attempt(coordinator: Coordinator, caller: Principal, request: CompletionRequest) -> tuple[str, ...]:
    try:
        coordinator.complete(caller, request)
    except CompletionRejected as rejected:
        return tuple(rejected.failed)
    except StudioloError as refused:  # refused before the predicate (e.g. request_id_conflict)
        return (refused.reason,)
    return ()


def _pinned_is_latest(door_view: Coordinator, caller: Principal, request: CompletionRequest) -> bool:
    task = door_view.task_view(caller, request.task_id).task
    newest = max(p.version for p in door_view.policies(caller, task.project_id))
    return task.contract.policy_version == newest
