"""The thirteen completion mechanisms under test (report §6.2).

Each mechanism is a set of named checks plus one timing choice: evaluate the
checks at the commit event (atomic with the terminal write), or reuse the
verdict cached at the preflight event.  Every check reads the world's current
state and the submitted request; none of them consults the oracle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from studiolo.study.world import CHECKERS, CompletionRequest, VerificationRecord, World, digest

__all__ = ["MECHANISMS", "Check", "Mechanism", "Verdict", "mechanism"]


class Check(StrEnum):
    """The model's symbolic completion predicates, in the order they are reported."""

    CALLER = "caller-matches-attempt"
    CURRENT_ATTEMPT = "current-attempt"
    FENCE = "fence"
    LEASE = "lease-live"
    AUTHORIZED = "authorized-now"
    INPUT_REVISION = "input-revision"
    ARTIFACT_BINDING = "artifact-binding"
    EVIDENCE = "evidence"
    CONTRACT_BINDING = "contract-binding"
    LATEST_POLICY = "latest-policy"


def _caller(world: World, q: CompletionRequest) -> bool:
    attempt = world.attempts.get(q.attempt_id)
    return attempt is not None and attempt.principal == q.principal


def _current_attempt(world: World, q: CompletionRequest) -> bool:
    return world.attempt.attempt_id == q.attempt_id


def _fence(world: World, q: CompletionRequest) -> bool:
    return world.attempt.fence == q.fence


def _lease(world: World, q: CompletionRequest) -> bool:
    # The task's current lease; which attempt holds it is the attempt binding's question.
    return world.lease_live


def _authorized(world: World, q: CompletionRequest) -> bool:
    return q.principal not in world.revoked


def _input_revision(world: World, q: CompletionRequest) -> bool:
    return q.input_revision == world.input_revision


def _artifact_binding(world: World, q: CompletionRequest) -> bool:
    """The bytes that would become authoritative are the named candidate's bytes."""
    candidate = world.candidates.get(q.candidate_id)
    return (
        candidate is not None
        and candidate.digest == q.candidate_digest
        and digest(world.working_copy) == candidate.digest
    )


def _evidence(world: World, q: CompletionRequest) -> bool:
    """Every cited receipt is protected and bound to the request; all criteria pass."""
    contract = world.setup.contracts.get(q.contract_hash)
    if contract is None or not q.evidence_ids:
        return False
    passing: set[tuple[str, str]] = set()
    for receipt_id in q.evidence_ids:
        record = world.evidence.get(receipt_id)
        if record is None or not _binds(record, q, contract.task, world):
            return False
        if record.passed:
            passing.add((record.criterion, record.checker))
    return all(criterion in passing for criterion in contract.criteria)


def _binds(record: VerificationRecord, q: CompletionRequest, task: str, world: World) -> bool:
    return (
        record.issuer == world.setup.verifier
        and record.checker in CHECKERS
        and record.task == task
        and record.attempt_id == q.attempt_id
        and record.contract_hash == q.contract_hash
        and record.candidate_id == q.candidate_id
        and record.candidate_digest == q.candidate_digest
        and record.input_revision == q.input_revision
    )


def _contract_binding(world: World, q: CompletionRequest) -> bool:
    return q.contract_hash == world.setup.pinned_hash


def _latest_policy(world: World, q: CompletionRequest) -> bool:
    return world.setup.pinned.policy == world.default_policy


Predicate = Callable[[World, CompletionRequest], bool]

_PREDICATES: Mapping[Check, Predicate] = MappingProxyType(
    {
        Check.CALLER: _caller,
        Check.CURRENT_ATTEMPT: _current_attempt,
        Check.FENCE: _fence,
        Check.LEASE: _lease,
        Check.AUTHORIZED: _authorized,
        Check.INPUT_REVISION: _input_revision,
        Check.ARTIFACT_BINDING: _artifact_binding,
        Check.EVIDENCE: _evidence,
        Check.CONTRACT_BINDING: _contract_binding,
        Check.LATEST_POLICY: _latest_policy,
    }
)


@dataclass(frozen=True, slots=True)
class Verdict:
    """Accept, or reject with the first failing check (checks run in order)."""

    failed: Check | None

    @property
    def accepted(self) -> bool:
        return self.failed is None


_ACCEPT = Verdict(None)


@dataclass(frozen=True)
class Mechanism:
    """A completion mechanism: which checks it runs, and whether commit reuses preflight."""

    mechanism_id: str
    checks: tuple[Check, ...]
    reuse_preflight: bool = False
    _predicates: tuple[tuple[Check, Predicate], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        resolved = tuple((check, _PREDICATES[check]) for check in self.checks)
        object.__setattr__(self, "_predicates", resolved)

    def evaluate(self, world: World, q: CompletionRequest) -> Verdict:
        for check, holds in self._predicates:
            if not holds(world, q):
                return Verdict(check)
        return _ACCEPT

    def decide(self, world: World, q: CompletionRequest, cached: Verdict | None) -> Verdict:
        if self.reuse_preflight and cached is not None:
            return cached
        return self.evaluate(world, q)


_FULL: tuple[Check, ...] = tuple(c for c in Check if c is not Check.LATEST_POLICY)
_ATTEMPT: tuple[Check, ...] = (Check.CALLER, Check.CURRENT_ATTEMPT, Check.FENCE)


def _without(*removed: Check) -> tuple[Check, ...]:
    return tuple(c for c in _FULL if c not in removed)


MECHANISMS: tuple[Mechanism, ...] = (
    # Every check, evaluated at commit together with the terminal write.
    Mechanism("full-atomic", _FULL),
    # The same checks evaluated at preflight; commit trusts that verdict.
    Mechanism("split-preflight", _FULL, reuse_preflight=True),
    # Ownership and time window only.
    Mechanism("attempt-lease-only", (*_ATTEMPT, Check.LEASE)),
    # Ablations: the full contract minus one obligation (attempt binding = caller,
    # attempt id and fence together).
    Mechanism("no-attempt-binding", _without(*_ATTEMPT)),
    Mechanism("no-fence", _without(Check.FENCE)),
    Mechanism("no-lease", _without(Check.LEASE)),
    Mechanism("no-input-revision", _without(Check.INPUT_REVISION)),
    Mechanism("no-authorization", _without(Check.AUTHORIZED)),
    Mechanism("no-artifact-binding", _without(Check.ARTIFACT_BINDING)),
    Mechanism("no-evidence", _without(Check.EVIDENCE)),
    Mechanism("no-contract-binding", _without(Check.CONTRACT_BINDING)),
    # Overstrict: also demands the newest default policy.
    Mechanism("latest-policy", (*_FULL, Check.LATEST_POLICY)),
    # Accepts whatever the worker reports.
    Mechanism("report-only", ()),
)


def mechanism(mechanism_id: str) -> Mechanism:
    """Look a mechanism up by its id (``KeyError`` for an unknown id)."""
    for candidate in MECHANISMS:
        if candidate.mechanism_id == mechanism_id:
            return candidate
    raise KeyError(mechanism_id)
