"""Stable reason codes. Every code is documented in docs/reasons.md (a test checks)."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["OTHER_REASONS", "Reason"]


class Reason(StrEnum):
    """The completion predicates of SPEC §2, in evaluation order, named by their failure."""

    TASK_NOT_FOUND = "task_not_found"
    TASK_NOT_ACTIVE = "task_not_active"
    CALLER_NOT_ATTEMPT_OWNER = "caller_not_attempt_owner"
    ATTEMPT_SUPERSEDED = "attempt_superseded"
    LEASE_EXPIRED = "lease_expired"
    CANDIDATE_NOT_BOUND = "candidate_not_bound"
    SCOPE_VIOLATION = "scope_violation"
    NOT_AUTHORIZED = "not_authorized"
    CONTRACT_MISMATCH = "contract_mismatch"
    DEPENDENCY_STALE = "dependency_stale"
    TARGET_BASE_STALE = "target_base_stale"
    PATH_CONFLICT = "path_conflict"  # not in SPEC §2's table: issue 32, finding 3
    EVIDENCE_UNTRUSTED = "evidence_untrusted"
    EVIDENCE_NOT_BOUND = "evidence_not_bound"
    EVIDENCE_NOT_SEPARATE = "evidence_not_separate"
    EVIDENCE_MISSING = "evidence_missing"
    EVIDENCE_FAILED = "evidence_failed"


# Reason codes raised outside the completion predicate (by other operations of the door).
OTHER_REASONS: tuple[str, ...] = (
    "request_id_conflict",
    "invalid_request",
    "invalid_path",
    "payload_too_large",
    "unauthenticated",
    "not_found",
    "revision_conflict",
    "task_already_claimed",
    "attempt_not_active",
    "blob_missing",
    "unknown_checker",
    "signature_invalid",
    "verifier_not_admitted",
    "conflict",
    "method_not_allowed",
    "internal_error",
)
