"""Run one schedule in a fresh world and let each mechanism decide it.

The worker follows the main chain honestly unless a :class:`WorkerPlan` says
otherwise (the negative controls use plans).  Environment events change the
world between the worker's steps.

Nothing in the world reacts to a decision: the worker always submits, the
environment events are scripted, and a mechanism only reads the world.  So
one world serves every mechanism of an execution batch, and each mechanism
gets its own *door*: its own preflight cache, its own ledger (terminal
writes) and its own replay checks.  ``execute(schedule, [m])`` is one
mechanism alone; a test checks that batching changes no decision.

After an accepted decision, once every event has happened, the door replays
the identical request and a conflicting one (report §6.4).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from studiolo.study.ledger import Completion, CompletionStatus, Ledger
from studiolo.study.mechanisms import Mechanism, Verdict
from studiolo.study.schedules import Event, Schedule
from studiolo.study.table import Decision, ReplayCheck
from studiolo.study.world import Attempt, Candidate, CompletionRequest, Setup, World, digest

__all__ = ["HONEST", "STEPS", "WorkerPlan", "decide", "execute", "honest_answer"]


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
class _Door:
    """One mechanism's side of an execution: its preflight cache and its ledger."""

    mechanism: Mechanism
    ledger: Ledger = field(default_factory=Ledger)
    cached: Verdict | None = None
    completion: Completion | None = None

    def preflight(self, world: World, q: CompletionRequest) -> None:
        self.cached = self.mechanism.evaluate(world, q)

    def commit(self, world: World, q: CompletionRequest) -> None:
        self.completion = self.ledger.complete(q, lambda: self.judge(world, q))

    def judge(self, world: World, q: CompletionRequest) -> bool:
        return self.mechanism.decide(world, q, self.cached).accepted

    def decision(self, world: World, q: CompletionRequest, changed: CompletionRequest) -> Decision:
        """The decision, with both replays for an accepted one (run after every event).

        ``changed`` reuses the request id of ``q`` with another candidate digest.
        """
        original = self.completion
        if original is None or original.status is not CompletionStatus.ACCEPTED:
            return Decision(accepted=False)
        again = self.ledger.complete(q, lambda: self.judge(world, q))
        identical = (
            again.status is CompletionStatus.REPLAYED
            and again.receipt == original.receipt
            and self.ledger.terminal_writes == 1
        )
        conflict = self.ledger.complete(changed, lambda: self.judge(world, changed))
        rejected = conflict.status is CompletionStatus.CONFLICT and self.ledger.terminal_writes == 1
        return Decision(accepted=True, replay=ReplayCheck(identical, rejected))


@dataclass(slots=True)
class _Run:
    """One execution's worker-side state and the doors deciding it."""

    world: World
    plan: WorkerPlan
    attempt: Attempt
    doors: tuple[_Door, ...]
    snapshot: tuple[int, int] = (0, 0)
    candidate: Candidate | None = None
    evidence_ids: tuple[str, ...] = ()
    submitted: CompletionRequest | None = None

    def read(self) -> None:
        revision = self.world.input_revision
        self.snapshot = (revision, self.world.input_at(revision))

    def prepare_candidate(self) -> None:
        revision, value = self.snapshot
        data = self.plan.answer(value)
        self.candidate = self.world.stage_candidate(self.attempt.attempt_id, data, revision)
        self.world.write_working_copy(data)

    def trusted_verify(self) -> None:
        self.evidence_ids = self.plan.evidence(self.world, self.need_candidate(), self.claim)

    def preflight(self) -> None:
        q = self.request()
        for door in self.doors:
            door.preflight(self.world, q)

    def commit(self) -> None:
        q = self.request()
        for door in self.doors:
            door.commit(self.world, q)

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


def execute(
    schedule: Schedule,
    mechanisms: Sequence[Mechanism],
    setup: Setup,
    plan: WorkerPlan = HONEST,
) -> tuple[Decision, ...]:
    """Run ``schedule`` once; one decision per mechanism, in order."""
    world = World.new(setup)
    run = _Run(world, plan, world.attempt, tuple(_Door(m) for m in mechanisms))
    for event in schedule:
        STEPS[event](run)
    request = run.request()
    changed = dataclasses.replace(request, candidate_digest=digest(b"a different candidate"))
    return tuple(door.decision(world, request, changed) for door in run.doors)


def decide(schedule: Schedule, mechanism: Mechanism, setup: Setup, plan: WorkerPlan = HONEST) -> Decision:
    """One mechanism alone on ``schedule``."""
    return execute(schedule, (mechanism,), setup, plan)[0]
