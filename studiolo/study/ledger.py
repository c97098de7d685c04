"""The completion door's ledger: request-id idempotency and the terminal write.

Idempotency is common infrastructure, not a mechanism's check (report §6.4):
a known request id is answered before any check runs.  Each mechanism in an
execution has its own ledger, so its terminal writes are its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from studiolo.study.world import CompletionRequest

__all__ = ["Completion", "CompletionReceipt", "CompletionStatus", "Ledger"]


@dataclass(frozen=True, slots=True)
class CompletionReceipt:
    request_id: str
    attempt_id: str
    candidate_digest: str
    commit_version: int


class CompletionStatus(StrEnum):
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    REPLAYED = "replayed"
    CONFLICT = "request_id_conflict"


@dataclass(frozen=True, slots=True)
class Completion:
    status: CompletionStatus
    receipt: CompletionReceipt | None = None


@dataclass(slots=True)
class Ledger:
    """Committed requests by request id, and the count of terminal writes."""

    entries: dict[str, tuple[CompletionRequest, CompletionReceipt]] = field(default_factory=dict)
    terminal_writes: int = 0

    def complete(self, request: CompletionRequest, accept: Callable[[], bool]) -> Completion:
        """Replay, refuse a conflicting reuse, or ask ``accept()`` and record the result."""
        prior = self.entries.get(request.request_id)
        if prior is not None:
            if prior[0] == request:
                return Completion(CompletionStatus.REPLAYED, prior[1])
            return Completion(CompletionStatus.CONFLICT)
        if not accept():
            return Completion(CompletionStatus.REJECTED)
        self.terminal_writes += 1
        receipt = CompletionReceipt(
            request.request_id, request.attempt_id, request.candidate_digest, self.terminal_writes
        )
        self.entries[request.request_id] = (request, receipt)
        return Completion(CompletionStatus.ACCEPTED, receipt)
