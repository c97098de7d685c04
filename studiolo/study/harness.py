"""Run one schedule through one mechanism in a fresh world, then check replays.

The worker follows the main chain honestly unless a :class:`WorkerPlan` says
otherwise (the negative controls use plans).  Environment events change the
world between the worker's steps.  After an accepted decision the harness
replays the identical request and a conflicting one (report §6.4).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from studiolo.study.mechanisms import Mechanism, Verdict
from studiolo.study.schedules import Event, Schedule
from studiolo.study.table import Decision, ReplayCheck
from studiolo.study.world import (
    Attempt,
    Candidate,
    Completion,
    CompletionRequest,
    CompletionStatus,
    Setup,
    World,
    digest,
)

__all__ = ["HONEST", "STEPS", "WorkerPlan", "execute", "honest_answer"]


def honest_answer(value: int) -> bytes:
    """The synthetic task: double the input."""
    return str(2 * value).encode()


def verify_working_copy(world: World, candidate: Candidate, contract_hash: str) -> tuple[str, ...]:
    """The model's verifier inspects the working artifact the candidate was written to."""
    return world.verify(candidate.candidate_id, contract_hash, world.working_copy)


EvidenceStep = Callable[[World, Candidate, str], tuple[str, ...]]


@dataclass(frozen=True)
class WorkerPlan:
    """How the worker answers, which contract it claims, and which receipts it cites."""

    answer: Callable[[int], bytes] = honest_answer
    claimed_contract_hash: str | None = None
    evidence: EvidenceStep = verify_working_copy


HONEST = WorkerPlan()


@dataclass(slots=True)
class _Run:
    """One execution's worker-side state (local to :func:`execute`)."""

    world: World
    mechanism: Mechanism
    plan: WorkerPlan
    attempt: Attempt
    snapshot: tuple[int, int] = (0, 0)
    candidate: Candidate | None = None
    evidence_ids: tuple[str, ...] = ()
    preflight_verdict: Verdict | None = None
    submitted: CompletionRequest | None = None
    completion: Completion | None = None

    def read(self) -> None:
        revision = self.world.input_revision
        self.snapshot = (revision, self.world.input_at(revision))

    def trusted_verify(self) -> None:
        self.evidence_ids = self.plan.evidence(self.world, self.need_candidate(), self.claim)

    def preflight(self) -> None:
        self.preflight_verdict = self.mechanism.evaluate(self.world, self.request())

    def commit(self) -> None:
        self.completion = self.world.complete(self.request(), self.judge)

    def prepare_candidate(self) -> None:
        revision, value = self.snapshot
        data = self.plan.answer(value)
        self.candidate = self.world.stage_candidate(self.attempt.attempt_id, data, revision)
        self.world.write_working_copy(data)

    def need_candidate(self) -> Candidate:
        if self.candidate is None:
            raise RuntimeError("the main chain prepares a candidate before using it")
        return self.candidate

    @property
    def claim(self) -> str:
        return self.plan.claimed_contract_hash or self.world.setup.pinned_hash

    def request(self) -> CompletionRequest:
        """The completion request; fixed once built (after trusted-verify)."""
        if self.submitted is None:
            self.submitted = self._build_request()
        return self.submitted

    def _build_request(self) -> CompletionRequest:
        candidate, attempt = self.need_candidate(), self.attempt
        return CompletionRequest(
            request_id=f"{attempt.attempt_id}/complete",
            principal=attempt.principal,
            attempt_id=attempt.attempt_id,
            fence=attempt.fence,
            contract_hash=self.claim,
            candidate_id=candidate.candidate_id,
            candidate_digest=candidate.digest,
            input_revision=candidate.input_revision,
            evidence_ids=self.evidence_ids,
        )

    def judge(self, world: World, q: CompletionRequest) -> bool:
        return self.mechanism.decide(world, q, self.preflight_verdict).accepted


def _input_edit(run: _Run) -> None:
    run.world.edit_input()


def _artifact_edit(run: _Run) -> None:
    run.world.edit_artifact()


def _expire(run: _Run) -> None:
    run.world.expire_lease()


def _reassign(run: _Run) -> None:
    run.world.reassign()


def _revoke(run: _Run) -> None:
    run.world.revoke_worker()


def _publish_policy(run: _Run) -> None:
    run.world.publish_policy()


STEPS: Mapping[Event, Callable[[_Run], None]] = MappingProxyType(
    {
        Event.READ: _Run.read,
        Event.CANDIDATE: _Run.prepare_candidate,
        Event.TRUSTED_VERIFY: _Run.trusted_verify,
        Event.PREFLIGHT: _Run.preflight,
        Event.COMMIT: _Run.commit,
        Event.INPUT_EDIT: _input_edit,
        Event.ARTIFACT_EDIT: _artifact_edit,
        Event.EXPIRE: _expire,
        Event.REASSIGN: _reassign,
        Event.REVOKE: _revoke,
        Event.PUBLISH_POLICY: _publish_policy,
    }
)


def execute(schedule: Schedule, mechanism: Mechanism, setup: Setup, plan: WorkerPlan = HONEST) -> Decision:
    """Run ``schedule`` under ``mechanism``; replay-check an accepted decision."""
    world = World.new(setup)
    run = _Run(world, mechanism, plan, attempt=world.attempt)
    for event in schedule:
        STEPS[event](run)
    if run.completion is None or run.completion.status is not CompletionStatus.ACCEPTED:
        return Decision(accepted=False)
    return Decision(accepted=True, replay=_replay(run, run.completion))


def _replay(run: _Run, original: Completion) -> ReplayCheck:
    """Both replays run after every event of the schedule has happened."""
    world, request = run.world, run.request()
    again = world.complete(request, run.judge)
    identical = (
        again.status is CompletionStatus.REPLAYED
        and again.receipt == original.receipt
        and world.terminal_writes == 1
    )
    changed = dataclasses.replace(request, candidate_digest=digest(b"a different candidate"))
    conflict = world.complete(changed, run.judge)
    rejected = conflict.status is CompletionStatus.CONFLICT and world.terminal_writes == 1
    return ReplayCheck(identical_returned_receipt=identical, changed_digest_rejected=rejected)
