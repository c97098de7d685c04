"""Run the delegations: draw each remote task once, let every requester decide on it, and
judge each decision against the task's true timeline.

A decision is *premature* when it finalizes while one of the task's artifacts is not yet
retrievable (or never will be); it finalizes *tampered* work when the task carried an
injected integrity fault. Added latency is a finalized decision's time minus the terminal
state's: the naive requester finalizes at the terminal state, so its added latency is 0.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from studiolo.a2a_study.model import Params, Tamper
from studiolo.a2a_study.remote import RemoteTask, draw_task
from studiolo.a2a_study.requesters import REQUESTERS, Decision, Kind, Requester

__all__ = [
    "DEFAULT_SEED",
    "DEFAULT_TASKS",
    "Audit",
    "Progress",
    "StudyResult",
    "Tally",
    "World",
    "audit",
    "nearest_rank",
    "run_study",
]

DEFAULT_SEED = 0
DEFAULT_TASKS = 10_000

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Audit:
    """The true timeline's verdict on one decision."""

    premature: bool
    tampered: bool
    added_ms: int | None  # finalized decisions only


def audit(task: RemoteTask, decision: Decision) -> Audit:
    if decision.kind is not Kind.FINALIZED:
        return Audit(premature=False, tampered=False, added_ms=None)
    premature = not all(a.retrievable(decision.at_ms) for a in task.artifacts)
    wrong = any(decision.payloads.get(a.artifact_id, a.genuine) != a.genuine for a in task.artifacts)
    tampered = task.tamper is not Tamper.NONE or wrong
    return Audit(premature, tampered, decision.at_ms - task.terminal_ms)


def nearest_rank(values: list[int], percent: float) -> int | None:
    """The nearest-rank percentile of integer values (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(percent / 100 * len(ordered)) - 1)]


@dataclass
class Tally:
    """One requester's decisions over every task."""

    requester: str
    finalized: int = 0
    premature: int = 0
    premature_detached: int = 0
    tampered_finalized: int = 0
    integrity_failed: Counter[str] = field(default_factory=Counter)
    indeterminate: Counter[str] = field(default_factory=Counter)
    added_detached_ms: list[int] = field(default_factory=list)
    added_other_ms: list[int] = field(default_factory=list)

    def add(self, task: RemoteTask, decision: Decision, verdict: Audit) -> None:
        if decision.kind is Kind.INTEGRITY_FAILED:
            self.integrity_failed[decision.code] += 1
        elif decision.kind is Kind.INDETERMINATE:
            self.indeterminate[decision.code] += 1
        else:
            self._finalized(task, verdict)

    def _finalized(self, task: RemoteTask, verdict: Audit) -> None:
        self.finalized += 1
        self.premature += verdict.premature
        self.premature_detached += verdict.premature and task.detached
        self.tampered_finalized += verdict.tampered
        assert verdict.added_ms is not None
        (self.added_detached_ms if task.detached else self.added_other_ms).append(verdict.added_ms)


@dataclass
class World:
    """What was drawn: the injected conditions, counted from the remote tasks themselves."""

    tasks: int = 0
    artifacts: int = 0
    detached_tasks: int = 0
    late_tasks: int = 0  # terminal state before an artifact was retrievable
    late_detached_tasks: int = 0
    lost_artifacts: int = 0
    lost_tasks: int = 0
    tampered: Counter[str] = field(default_factory=Counter)
    terminal: Counter[str] = field(default_factory=Counter)

    def add(self, task: RemoteTask) -> None:
        self.tasks += 1
        self.artifacts += len(task.artifacts)
        self.detached_tasks += task.detached
        self.late_tasks += task.late
        self.late_detached_tasks += task.late and task.detached
        self.lost_artifacts += sum(a.available_ms is None for a in task.artifacts)
        self.lost_tasks += task.lost
        if task.tamper is not Tamper.NONE:
            self.tampered[task.tamper.value] += 1
        self.terminal[task.terminal.value] += 1


@dataclass(frozen=True)
class StudyResult:
    seed: int
    params: Params
    world: World
    tallies: tuple[Tally, ...]

    def tally(self, requester: str) -> Tally:
        return next(t for t in self.tallies if t.requester == requester)


def run_study(
    seed: int = DEFAULT_SEED,
    tasks: int = DEFAULT_TASKS,
    params: Params | None = None,
    *,
    requesters: Mapping[str, Requester] = REQUESTERS,
    progress: Progress | None = None,
) -> StudyResult:
    """Delegate ``tasks`` remote tasks of world ``seed`` to every requester."""
    if tasks < 1:
        raise ValueError("tasks must be at least 1")
    chosen = params or Params()
    world = World()
    tallies = {name: Tally(name) for name in requesters}
    for index in range(tasks):
        task = draw_task(chosen, seed, index)
        world.add(task)
        for name, requester in requesters.items():
            decision = requester(task, chosen)
            tallies[name].add(task, decision, audit(task, decision))
        if progress is not None and ((index + 1) % 1000 == 0 or index + 1 == tasks):
            progress(index + 1, tasks)
    return StudyResult(seed, chosen, world, tuple(tallies.values()))
