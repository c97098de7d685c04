"""The small simulated world the mechanisms run in (report §6.1).

One task whose synthetic job is to double a number; one submitting worker and
a replacement owner that never prepares its own candidate; one input object
with a revision history; one mutable working artifact; and a protected
evidence store written only by the admitted verifier.  The completion ledger
is separate (``ledger.py``): each mechanism has its own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import rfc8785

__all__ = [
    "CHECKERS",
    "Attempt",
    "Candidate",
    "CompletionRequest",
    "Contract",
    "Setup",
    "VerificationRecord",
    "World",
    "digest",
]

EDITED_BYTES = b"edited by another writer"


def digest(data: bytes) -> str:
    """SHA-256 byte identifier (a deterministic name, not a security claim)."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _doubles(answer: bytes, value: int) -> bool:
    return answer.strip().isdigit() and int(answer) == 2 * value


def _is_integer(answer: bytes, value: int) -> bool:
    del value  # the inadequate checker ignores the input on purpose
    return answer.strip().isdigit()


Checker = Callable[[bytes, int], bool]

CHECKERS: Mapping[str, Checker] = MappingProxyType({"double@1": _doubles, "integer@1": _is_integer})


@dataclass(frozen=True)
class Contract:
    """What done means: the task, its criteria (criterion → checker) and its policy."""

    task: str
    criteria: tuple[tuple[str, str], ...]
    policy: str

    def contract_hash(self) -> str:
        document: dict[str, Any] = {
            "task": self.task,
            "criteria": dict(self.criteria),
            "policy": self.policy,
        }
        return digest(rfc8785.dumps(document))


@dataclass(frozen=True, slots=True)
class Attempt:
    attempt_id: str
    principal: str
    fence: int


@dataclass(frozen=True)
class Setup:
    """The fixed parameters of one world: identities, contracts, initial values."""

    pinned: Contract
    registered: tuple[Contract, ...]
    worker: str = "worker"
    replacement: str = "replacement"
    verifier: str = "verifier"
    initial_input: int = 21
    initial_artifact: bytes = b"0"
    next_policy: str = "behavior-v2"
    contracts: Mapping[str, Contract] = field(init=False)
    pinned_hash: str = field(init=False)
    first_attempt: Attempt = field(init=False)

    def __post_init__(self) -> None:
        known = {c.contract_hash(): c for c in (self.pinned, *self.registered)}
        object.__setattr__(self, "contracts", MappingProxyType(known))
        object.__setattr__(self, "pinned_hash", self.pinned.contract_hash())
        first = Attempt(f"{self.pinned.task}/attempt-1", self.worker, fence=1)
        object.__setattr__(self, "first_attempt", first)


@dataclass(frozen=True, slots=True)
class Candidate:
    """An immutable byte snapshot prepared by an attempt, with its declared input."""

    candidate_id: str
    attempt_id: str
    data: bytes
    digest: str
    input_revision: int


@dataclass(frozen=True, slots=True)
class VerificationRecord:
    """A protected observation by the admitted verifier."""

    receipt_id: str
    issuer: str
    task: str
    attempt_id: str
    contract_hash: str
    candidate_id: str
    candidate_digest: str
    input_revision: int
    criterion: str
    checker: str
    passed: bool


@dataclass(frozen=True, slots=True)
class CompletionRequest:
    """Q: what the worker submits; ``principal`` stands for the authenticated caller."""

    request_id: str
    principal: str
    attempt_id: str
    fence: int
    contract_hash: str
    candidate_id: str
    candidate_digest: str
    input_revision: int
    evidence_ids: tuple[str, ...]


@dataclass(slots=True)
class World:
    """The environment of one execution: everything except the completion ledger.

    Mechanisms only read it; the worker, the verifier and the environment
    events change it.
    """

    setup: Setup
    input_values: list[int]
    working_copy: bytes
    attempt: Attempt
    attempts: dict[str, Attempt]
    lease_live: bool = True
    revoked: set[str] = field(default_factory=set)
    default_policy: str = ""
    candidates: dict[str, Candidate] = field(default_factory=dict)
    evidence: dict[str, VerificationRecord] = field(default_factory=dict)

    @classmethod
    def new(cls, setup: Setup) -> World:
        first = setup.first_attempt
        return cls(
            setup=setup,
            input_values=[setup.initial_input],
            working_copy=setup.initial_artifact,
            attempt=first,
            attempts={first.attempt_id: first},
            default_policy=setup.pinned.policy,
        )

    # -- reads -------------------------------------------------------------

    @property
    def input_revision(self) -> int:
        return len(self.input_values)

    def input_at(self, revision: int) -> int:
        return self.input_values[revision - 1]

    # -- environment events ------------------------------------------------

    def edit_input(self) -> None:
        self.input_values.append(self.input_values[-1] + 1)

    def edit_artifact(self) -> None:
        """Another writer changes the working copy."""
        self.write_working_copy(EDITED_BYTES)

    def expire_lease(self) -> None:
        self.lease_live = False

    def reassign(self) -> None:
        """Replace the attempt: a new id, the next fence, a fresh lease for the new owner."""
        fence = self.attempt.fence + 1
        task = self.setup.pinned.task
        self.attempt = Attempt(f"{task}/attempt-{fence}", self.setup.replacement, fence)
        self.attempts[self.attempt.attempt_id] = self.attempt
        self.lease_live = True

    def revoke_worker(self) -> None:
        """Revoke the submitting principal's grant."""
        self.revoked.add(self.setup.worker)

    def publish_policy(self) -> None:
        self.default_policy = self.setup.next_policy

    # -- worker and verifier ------------------------------------------------

    def stage_candidate(self, attempt_id: str, data: bytes, input_revision: int) -> Candidate:
        candidate_id = f"candidate-{len(self.candidates) + 1}"
        staged = Candidate(candidate_id, attempt_id, data, digest(data), input_revision)
        self.candidates[candidate_id] = staged
        return staged

    def write_working_copy(self, data: bytes) -> None:
        self.working_copy = data

    def verify(self, candidate_id: str, contract_hash: str, observed: bytes) -> tuple[str, ...]:
        """The admitted verifier checks ``observed`` bytes under every criterion."""
        candidate = self.candidates[candidate_id]
        contract = self.setup.contracts[contract_hash]
        value = self.input_at(candidate.input_revision)
        receipts = []
        for criterion, checker in contract.criteria:
            receipt_id = f"receipt-{len(self.evidence) + 1}"
            self.evidence[receipt_id] = VerificationRecord(
                receipt_id=receipt_id,
                issuer=self.setup.verifier,
                task=contract.task,
                attempt_id=candidate.attempt_id,
                contract_hash=contract_hash,
                candidate_id=candidate_id,
                candidate_digest=digest(observed),
                input_revision=candidate.input_revision,
                criterion=criterion,
                checker=checker,
                passed=CHECKERS[checker](observed, value),
            )
            receipts.append(receipt_id)
        return tuple(receipts)
