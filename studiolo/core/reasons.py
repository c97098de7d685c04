"""Stable reason codes. Every code is documented in docs/reasons.md (a test checks)."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["OTHER_REASONS", "ErrorReason", "Reason"]


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


class ErrorReason(StrEnum):
    """The reason codes raised outside the completion predicate (by the other operations of
    the door, by the faces and by the client), in docs/reasons.md's order."""

    REQUEST_ID_CONFLICT = "request_id_conflict"
    INVALID_REQUEST = "invalid_request"
    INVALID_PATH = "invalid_path"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    UNAUTHENTICATED = "unauthenticated"
    NOT_FOUND = "not_found"
    REVISION_CONFLICT = "revision_conflict"
    TASK_ALREADY_CLAIMED = "task_already_claimed"
    ATTEMPT_NOT_ACTIVE = "attempt_not_active"
    BLOB_MISSING = "blob_missing"
    BYTES_DELETED = "bytes_deleted"
    LEGAL_HOLD = "legal_hold"
    UNKNOWN_CHECKER = "unknown_checker"
    SIGNATURE_INVALID = "signature_invalid"
    VERIFIER_NOT_ADMITTED = "verifier_not_admitted"
    CONFLICT = "conflict"
    TOO_MANY_STREAMS = "too_many_streams"
    OVERLOADED = "overloaded"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    INTERNAL_ERROR = "internal_error"
    COMPLETION_REJECTED = "completion_rejected"
    UNTRUSTED_RESPONSE = "untrusted_response"
    UNREACHABLE = "unreachable"


# Every code but the predicates' (kept for callers that want plain strings).
OTHER_REASONS: tuple[str, ...] = tuple(r.value for r in ErrorReason)
