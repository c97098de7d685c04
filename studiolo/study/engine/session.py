"""One history through the real door: the worker, the verifier and the environment.

A :class:`Session` turns each event of a schedule into real coordinator operations on the
branch ledger (see ``docs/study.md``, "Engine mode"):

- ``read``: the worker reads ``work/input.txt`` (value and revision).
- ``candidate``: the worker reads the target's current revision (its base), uploads
  twice the value it read and submits a candidate writing the target, declaring the input
  at the revision it read.  The door refuses a candidate from an attempt that is no longer
  current; the worker then has nothing to submit.
- ``trusted-verify``: the admitted verifier fetches the candidate, its bytes and the input
  at the declared revision, runs the contract's checkers and posts signed receipts.
- ``input-edit`` / ``artifact-edit``: the human editor edits the input (value + 1) or the
  target, directly, with compare-and-swap on the current revision.
- ``expire``: the authority clock moves past the lease.  ``reassign``: the admin gives the
  task to the replacement agent (a new attempt, the next fence, a fresh lease).
  ``revoke``: the admin revokes the worker's write/claim/complete grant (the read grant
  stays).  ``publish-policy``: the admin publishes policy version 2 (the task stays pinned).

``preflight`` and ``commit`` are the mechanisms' business (``decide.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from studiolo._exceptions import Conflict
from studiolo.core.model import Attempt, Candidate, Criterion, Task
from studiolo.core.predicate import CompletionRequest
from studiolo.core.reasons import Reason
from studiolo.keys import sign
from studiolo.service import CandidateDraft, Coordinator, make_request
from studiolo.study.engine.branch import BranchStore
from studiolo.study.engine.project import INPUT, LEASE_SECONDS, POLICY_V2, TARGET, EngineProject
from studiolo.study.schedules import Event
from studiolo.study.world import CHECKERS

__all__ = ["HONEST", "REQUEST_ID", "Plan", "Session", "WorkerState", "honest_answer", "verify_candidate"]

REQUEST_ID = "complete-1"


def honest_answer(value: int) -> bytes:
    """The synthetic task: double the input (the same bytes as the model's worker)."""
    return str(2 * value).encode()


@dataclass(frozen=True)
class WorkerState:
    """What the worker knows along one history (immutable: each event makes a new one).

    ``preflight`` is the verdict of the completion evaluated at the preflight event:
    ``"accepted"`` or the first failing reason.
    """

    read: tuple[int, int] | None = None  # (revision, value) of the input
    candidate: Candidate | None = None
    refused: str | None = None  # why the door refused the candidate
    evidence: tuple[str, ...] = ()
    preflight: str | None = None


EvidenceStep = Callable[["Session", Candidate], tuple[str, ...]]


def verify_candidate(session: Session, candidate: Candidate) -> tuple[str, ...]:
    """The honest evidence step: the admitted verifier checks the candidate."""
    return session.verify(candidate)


@dataclass(frozen=True)
class Plan:
    """How the worker answers, which receipts it cites, which contract it claims, which task.

    Every primary schedule uses :data:`HONEST`; the negative controls use other plans.
    """

    answer: Callable[[int], bytes] = honest_answer
    evidence: EvidenceStep = verify_candidate
    claimed_contract: Callable[[EngineProject], str] | None = None
    integer_task: bool = False


HONEST = Plan()


class Session:
    """The real coordinator driven through one history on a branch ledger."""

    def __init__(self, project: EngineProject, store: BranchStore, plan: Plan = HONEST) -> None:
        self.project = project
        self.store = store
        self.plan = plan
        self.task: Task = project.integer_task if plan.integer_task else project.task
        self.attempt: Attempt = project.integer_attempt if plan.integer_task else project.attempt
        self._doors: dict[frozenset[Reason], Coordinator] = {}

    def coordinator(self, disabled: frozenset[Reason] = frozenset()) -> Coordinator:
        """The door with ``disabled`` predicates switched off (one per set, reused)."""
        found = self._doors.get(disabled)
        if found is None:
            p = self.project
            found = Coordinator(self.store, p.settings, clock=p.clock, disabled_checks=disabled)
            self._doors[disabled] = found
        return found

    def apply(self, event: Event, state: WorkerState) -> WorkerState:
        """Run one event that is not the mechanism's (everything but preflight and commit)."""
        return _STEPS[event](self, state)

    def request(self, state: WorkerState) -> CompletionRequest | None:
        """The worker's completion request, or None when it has no candidate to submit."""
        if state.candidate is None:
            return None
        claimed = self.plan.claimed_contract
        return make_request(
            request_id=REQUEST_ID,
            task_id=self.task.id,
            attempt_id=self.attempt.id,
            fence=self.attempt.fence,
            contract_hash=claimed(self.project) if claimed else self.task.contract_hash,
            candidate_id=state.candidate.id,
            evidence=state.evidence,
        )

    # -- the worker ---------------------------------------------------------------

    def _read(self, state: WorkerState) -> WorkerState:
        p = self.project
        content = self.coordinator().read_artifact(p.worker, p.project_id, INPUT)
        assert content.data is not None
        return replace(state, read=(content.artifact.revision, int(content.data)))

    def _candidate(self, state: WorkerState) -> WorkerState:
        if state.read is None:
            raise RuntimeError("the main chain reads before it prepares a candidate")
        revision, value = state.read
        try:
            staged = self.stage(self.plan.answer(value), revision)
        except Conflict as refused:
            return replace(state, refused=refused.reason)
        return replace(state, candidate=staged)

    def stage(self, data: bytes, input_revision: int) -> Candidate:
        """Submit a candidate writing ``data`` to the target, based on its current revision."""
        p, door = self.project, self.coordinator()
        base = door.read_revision(p.worker, p.project_id, TARGET)
        digest = door.put_blob(p.worker, data)
        draft = CandidateDraft({TARGET: digest}, {TARGET: base}, {INPUT: input_revision}, {})
        return door.submit_candidate(p.worker, self.attempt.id, draft)

    def _trusted_verify(self, state: WorkerState) -> WorkerState:
        if state.candidate is None:
            return state  # nothing was staged: there is nothing to verify
        return replace(state, evidence=self.plan.evidence(self, state.candidate))

    # -- the verifier -------------------------------------------------------------

    def verify(self, candidate: Candidate) -> tuple[str, ...]:
        """Check the candidate's exact bytes against the input at its declared revision."""
        p, door = self.project, self.coordinator()
        staged = door.candidate(p.verifier, candidate.id)
        target = staged.files[TARGET]
        assert target is not None
        answer = door.get_blob(p.verifier, target)
        declared = door.read_artifact(p.verifier, p.project_id, INPUT, revision=staged.file_deps[INPUT])
        assert declared.data is not None
        value = int(declared.data)
        receipts = []
        for criterion in self.task.contract.criteria:
            body = self.receipt_body(staged, criterion, CHECKERS[criterion.checker](answer, value))
            receipts.append(door.submit_receipt(p.verifier, staged.id, body, self.sign(body)).id)
        return tuple(receipts)

    def receipt_body(
        self, candidate: Candidate, criterion: Criterion, passed: bool, digest: str | None = None
    ) -> dict[str, Any]:
        """The verifier's observation (``digest`` overrides the candidate digest it records)."""
        return {
            "task_id": candidate.task_id,
            "attempt_id": candidate.attempt_id,
            "contract_hash": self.task.contract_hash,
            "candidate_digest": digest or candidate.digest,
            "dependency_digest": candidate.dependency_digest,
            "criterion": criterion.id,
            "checker": criterion.checker,
            "result": "pass" if passed else "fail",
            "issued_at": int(self.project.clock() * 1000),
            "issuer": self.project.verifier.id,
            "log_digest": None,
        }

    def sign(self, body: Mapping[str, Any]) -> str:
        return sign(self.project.verifier_key, body)

    # -- the environment ----------------------------------------------------------

    def _input_edit(self, state: WorkerState) -> WorkerState:
        p, door = self.project, self.coordinator()
        current = door.read_artifact(p.human, p.project_id, INPUT)
        assert current.data is not None
        digest = door.put_blob(p.human, str(int(current.data) + 1).encode())
        door.edit_artifact(p.human, p.project_id, INPUT, digest, current.artifact.revision)
        return state

    def _artifact_edit(self, state: WorkerState) -> WorkerState:
        p, door = self.project, self.coordinator()
        base = door.read_revision(p.human, p.project_id, TARGET)
        door.edit_artifact(p.human, p.project_id, TARGET, p.edited_digest, base)
        return state

    def _expire(self, state: WorkerState) -> WorkerState:
        self.project.clock.advance(LEASE_SECONDS + 1)
        return state

    def _reassign(self, state: WorkerState) -> WorkerState:
        p = self.project
        try:
            self.coordinator().reassign(p.admin, self.task.id, p.replacement.id, LEASE_SECONDS)
        except Conflict as refused:
            # Only after an accepted commit: a completed task is not reassigned.
            if refused.reason != "task_not_active":
                raise
        return state

    def _revoke(self, state: WorkerState) -> WorkerState:
        self.coordinator().revoke_grant(self.project.admin, self.project.worker_write_grant)
        return state

    def _publish_policy(self, state: WorkerState) -> WorkerState:
        self.coordinator().publish_policy(self.project.admin, self.project.project_id, POLICY_V2)
        return state


_STEPS: Mapping[Event, Callable[[Session, WorkerState], WorkerState]] = MappingProxyType(
    {
        Event.READ: Session._read,
        Event.CANDIDATE: Session._candidate,
        Event.TRUSTED_VERIFY: Session._trusted_verify,
        Event.INPUT_EDIT: Session._input_edit,
        Event.ARTIFACT_EDIT: Session._artifact_edit,
        Event.EXPIRE: Session._expire,
        Event.REASSIGN: Session._reassign,
        Event.REVOKE: Session._revoke,
        Event.PUBLISH_POLICY: Session._publish_policy,
    }
)
