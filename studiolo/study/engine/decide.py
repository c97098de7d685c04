"""The mechanisms' events: preflight, commit and the replays after an accepted commit.

Every decision is the real ``Coordinator.complete`` transaction of the mechanism's door
(its predicates switched off), run on the branch ledger:

- ``preflight`` evaluates the full completion transaction and rolls it back: the verdict
  it would have given now (``"accepted"`` or the first failing reason) is cached.  Only
  ``split-preflight`` uses it.
- ``commit`` runs the door's completion.  ``split-preflight`` instead rejects unless the
  cached verdict accepted, and otherwise publishes through the transaction with every
  predicate off: it re-checks nothing.  ``latest-policy`` first reads the policies in the
  same transaction (nothing runs in between on the branch) and rejects unless the task's
  pinned version is the newest default.
- after an accepted commit, once the schedule's remaining events have happened, the
  identical request is replayed (the original completion comes back, ``replay=True``, the
  audit log does not move) and the request id is reused with another candidate
  (``request_id_conflict``, the audit log does not move).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from studiolo._exceptions import CompletionRejected, Conflict
from studiolo.core.model import Completion
from studiolo.core.predicate import CompletionRequest
from studiolo.core.reasons import Reason
from studiolo.study.engine.doors import Door
from studiolo.study.engine.session import Session, WorkerState
from studiolo.study.table import ReplayCheck

__all__ = ["ACCEPTED", "CHANGED_CANDIDATE", "Judge", "Outcome"]

ACCEPTED = "accepted"
CHANGED_CANDIDATE = "cnd_a-different-candidate"  # a well-formed id: the conflict answers first


@dataclass(frozen=True)
class Outcome:
    """A mechanism's decision at the commit event: the completion if it was accepted."""

    reason: str  # "accepted", or why not (a reason code, or the harness rule that refused)
    completion: Completion | None = None

    @property
    def accepted(self) -> bool:
        return self.completion is not None


class Judge:
    """Runs the mechanisms' transactions for one session and counts them."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.transactions: Counter[str] = Counter()

    def preflight(self, state: WorkerState) -> WorkerState:
        request = self.session.request(state)
        if request is None:
            return replace(state, preflight=f"no candidate ({state.refused})")
        with self.session.store.branch():
            self.transactions["preflight"] += 1
            verdict = self._complete(frozenset(), request)
        return replace(state, preflight=verdict.reason)

    def decide(self, door: Door, state: WorkerState) -> Outcome:
        request = self.session.request(state)
        if request is None:
            return Outcome(f"no candidate ({state.refused})")
        if door.reuse_preflight and state.preflight != ACCEPTED:
            return Outcome(f"preflight: {state.preflight}")
        if door.latest_policy and not self._pinned_policy_is_latest():
            return Outcome("pinned policy is not the latest")
        self.transactions["commit"] += 1
        return self._complete(door.commit_disabled, request)

    def replays(self, door: Door, state: WorkerState, original: Completion) -> ReplayCheck:
        request = self.session.request(state)
        assert request is not None
        coordinator = self.session.coordinator(door.commit_disabled)
        worker = self.session.project.worker
        head = self._audit_head()
        self.transactions["replay"] += 2
        try:
            again = coordinator.complete(worker, request)
        except CompletionRejected:
            identical = False
        else:
            same = (again.completion.id, again.completion.receipt, again.completion.signature)
            identical = again.replay and same == (original.id, original.receipt, original.signature)
        changed = replace(request, candidate_id=CHANGED_CANDIDATE)
        try:
            coordinator.complete(worker, changed)
            conflict = False
        except Conflict as refused:
            conflict = refused.reason == "request_id_conflict"
        except CompletionRejected:
            conflict = False
        # Neither replay may write anything: not a completion, not even an audit event.
        unchanged = self._audit_head() == head
        return ReplayCheck(identical and unchanged, conflict and unchanged)

    def _complete(self, disabled: frozenset[Reason], request: CompletionRequest) -> Outcome:
        coordinator = self.session.coordinator(disabled)
        try:
            outcome = coordinator.complete(self.session.project.worker, request)
        except CompletionRejected as rejected:
            return Outcome(rejected.failed[0])
        return Outcome(ACCEPTED, outcome.completion)

    def _pinned_policy_is_latest(self) -> bool:
        p = self.session.project
        versions = [policy.version for policy in self.session.coordinator().policies(p.admin, p.project_id)]
        return max(versions) == self.session.task.contract.policy_version

    def _audit_head(self) -> tuple[int, str]:
        return self.session.store.read(lambda tx: tx.audit.last())
