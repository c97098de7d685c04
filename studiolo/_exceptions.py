"""The one error tree. Everything that crosses a boundary derives from StudioloError.

    StudioloError                      (reason, status, failed, detail, details)
    ├── InvalidRequest        400      malformed ids, bad paths, unknown checkers, bad signatures
    │   ├── InvalidPath       400      `invalid_path`
    │   └── PayloadTooLarge   413      `payload_too_large`
    ├── Unauthenticated       401      `unauthenticated`
    ├── NotAuthorized         403      `not_authorized`
    ├── NotFound              404      `not_found`, `task_not_found`
    │   └── BytesDeleted      410      `bytes_deleted`: deleted on request or by retention (a tombstone)
    ├── Conflict              409      `revision_conflict`, `task_not_active`, `request_id_conflict`, ...
    └── CompletionRejected    409/404  a refused completion: `reason` = first of `failed`;
                                       `details`: what each failed predicate found (docs/reasons.md)

Each face maps this tree in exactly one place (HTTP problem+json, MCP isError, CLI exit codes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from studiolo.core.reasons import ErrorReason, Reason

__all__ = [
    "BytesDeleted",
    "CompletionRejected",
    "Conflict",
    "InvalidPath",
    "InvalidRequest",
    "NotAuthorized",
    "NotFound",
    "PayloadTooLarge",
    "StudioloError",
    "Unauthenticated",
]


class StudioloError(Exception):
    """Base of every error a face may show. `reason` is a stable, documented code."""

    status: int = 500
    default_reason: str = ErrorReason.INTERNAL_ERROR

    def __init__(
        self,
        detail: str,
        *,
        reason: str | None = None,
        failed: Sequence[str] = (),
        details: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.reason = str(reason or self.default_reason)  # a plain str, whichever enum named it
        self.failed: tuple[str, ...] = tuple(str(f) for f in failed) or (self.reason,)
        # JSON objects, one per failed predicate that has facts to tell (`core.refusal_view`),
        # already filtered for the caller: any face may show them as they are.
        self.details: tuple[dict[str, Any], ...] = tuple(dict(d) for d in details)

    def to_dict(self) -> dict[str, object]:
        """The error as JSON; `details` only when there are some."""
        out: dict[str, object] = {"reason": self.reason, "failed": list(self.failed), "detail": self.detail}
        if self.details:
            out["details"] = [dict(d) for d in self.details]
        return out


class InvalidRequest(StudioloError):
    status = 400
    default_reason = ErrorReason.INVALID_REQUEST


class InvalidPath(InvalidRequest):
    default_reason = ErrorReason.INVALID_PATH


class PayloadTooLarge(InvalidRequest):
    status = 413
    default_reason = ErrorReason.PAYLOAD_TOO_LARGE


class Unauthenticated(StudioloError):
    status = 401
    default_reason = ErrorReason.UNAUTHENTICATED


class NotAuthorized(StudioloError):
    status = 403
    default_reason = Reason.NOT_AUTHORIZED


class NotFound(StudioloError):
    status = 404
    default_reason = ErrorReason.NOT_FOUND


class BytesDeleted(NotFound):
    """The bytes asked for were deleted; `detail` says when, by whom and why."""

    status = 410
    default_reason = ErrorReason.BYTES_DELETED


class Conflict(StudioloError):
    status = 409
    default_reason = ErrorReason.CONFLICT


class CompletionRejected(StudioloError):
    """A completion request that failed one or more predicates of the completion contract."""

    status = 409
    default_reason = ErrorReason.COMPLETION_REJECTED

    def __init__(
        self, failed: Sequence[str], detail: str = "", details: Sequence[Mapping[str, Any]] = ()
    ) -> None:
        first = failed[0]
        text = detail or f"completion rejected: {', '.join(failed)}"
        super().__init__(text, reason=first, failed=failed, details=details)
        if first == Reason.TASK_NOT_FOUND:
            self.status = 404
