"""Explore schedules through the real door: the trie of histories, depth first.

Schedules that share a prefix share its events, so the explorer walks the trie of all
schedules.  Each edge is one event run on the branch ledger inside a savepoint; moving back
up rolls the ledger (and the clock) back, so every schedule is run from the same initial
state and every continuation sees exactly the state its prefix left.  At a commit node every
mechanism decides in its own branch; an accepted decision continues through the schedule's
remaining events and ends with the replay checks.  A prefix is therefore run once however
many schedules share it: 4,246 distinct commit points carry the 6,694 schedules' decisions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from tempfile import TemporaryDirectory

from studiolo.core.model import Completion
from studiolo.study.engine.branch import BranchStore, open_branches
from studiolo.study.engine.decide import ACCEPTED, Judge
from studiolo.study.engine.doors import DOORS, Door
from studiolo.study.engine.project import EngineProject, open_project
from studiolo.study.engine.session import HONEST, Plan, Session, WorkerState
from studiolo.study.schedules import Event, Schedule
from studiolo.study.table import ReplayCheck

__all__ = ["EngineDecision", "Exploration", "explore", "ledger"]


@dataclass(frozen=True)
class EngineDecision:
    """One mechanism's decision on one schedule, with its reason and (if accepted) replays."""

    accepted: bool
    reason: str
    replay: ReplayCheck | None = None


@dataclass(frozen=True)
class Exploration:
    """Decisions by schedule index (one per door, in ``DOORS`` order) and transaction counts."""

    decisions: dict[int, tuple[EngineDecision, ...]]
    transactions: Counter[str]


@dataclass
class _Node:
    children: dict[Event, _Node] = field(default_factory=dict)
    ends: list[int] = field(default_factory=list)  # schedules that end here
    below: list[int] = field(default_factory=list)  # schedules through this node


def _trie(indexed: Sequence[tuple[int, Schedule]]) -> _Node:
    root = _Node()
    for index, schedule in indexed:
        node = root
        for event in schedule:
            node = node.children.setdefault(event, _Node())
            node.below.append(index)
        node.ends.append(index)
    return root


class _Explorer:
    def __init__(self, session: Session) -> None:
        self.session = session
        self.judge = Judge(session)
        self.store = session.store
        self.decisions: dict[int, list[EngineDecision | None]] = {}

    def run(self, root: _Node) -> dict[int, tuple[EngineDecision, ...]]:
        self._walk(root, WorkerState())
        return {index: _complete_row(index, row) for index, row in self.decisions.items()}

    def _walk(self, node: _Node, state: WorkerState) -> None:
        if node.ends:
            raise ValueError("every schedule has a commit event")
        for event, child in node.children.items():
            if event is Event.COMMIT:
                self._commit(child, state)
                continue
            with self.store.branch():
                self._walk(child, self._step(event, state))

    def _step(self, event: Event, state: WorkerState) -> WorkerState:
        if event is Event.PREFLIGHT:
            return self.judge.preflight(state)
        return self.session.apply(event, state)

    def _commit(self, node: _Node, state: WorkerState) -> None:
        for position, door in enumerate(DOORS):
            with self.store.branch():
                outcome = self.judge.decide(door, state)
                if outcome.completion is None:
                    for index in node.below:
                        self._record(index, position, EngineDecision(False, outcome.reason))
                else:
                    self._after_commit(node, state, door, position, outcome.completion)

    def _after_commit(
        self, node: _Node, state: WorkerState, door: Door, position: int, completion: Completion
    ) -> None:
        for index in node.ends:
            with self.store.branch():
                replay = self.judge.replays(door, state, completion)
            self._record(index, position, EngineDecision(True, ACCEPTED, replay))
        for event, child in node.children.items():
            with self.store.branch():
                self.session.apply(event, state)
                self._after_commit(child, state, door, position, completion)

    def _record(self, index: int, position: int, decision: EngineDecision) -> None:
        row = self.decisions.setdefault(index, [None] * len(DOORS))
        row[position] = decision


def _complete_row(index: int, row: list[EngineDecision | None]) -> tuple[EngineDecision, ...]:
    decided = tuple(d for d in row if d is not None)
    if len(decided) != len(DOORS):
        raise RuntimeError(f"schedule {index} was not decided by every mechanism")
    return decided


@contextmanager
def ledger() -> Iterator[tuple[EngineProject, BranchStore]]:
    """A fresh ledger with the study's project, opened for branch exploration."""
    with TemporaryDirectory(prefix="studiolo-engine-") as directory:
        project = open_project(Path(directory))
        try:
            with open_branches(project.store, project.clock) as store:
                yield project, store
        finally:
            project.store.dispose()


def explore(
    indexed: Sequence[tuple[int, Schedule]],
    plan: Plan = HONEST,
    opened: tuple[EngineProject, BranchStore] | None = None,
) -> Exploration:
    """Every door's decision on every ``(index, schedule)``, through the real coordinator."""
    if opened is None:
        with ledger() as fresh:
            return explore(indexed, plan, fresh)
    explorer = _Explorer(Session(*opened, plan))
    decisions = explorer.run(_trie(indexed))
    return Exploration(decisions, explorer.judge.transactions)
