"""Evidence retention, legal holds and deleted bytes: the pure rules (docs/operations.md,
"Retention and deletion"). No clock, no I/O: the door passes `now` and the rows it read.

- A **retention policy** gives a project a period (seconds) per kind of evidence; `None`
  keeps it for ever (the default).
- A **legal hold** on a task or on a whole project keeps everything of what it covers:
  nothing it covers expires, and no bytes it covers are deleted on request.
- A **tombstone** records bytes that were deleted (by a retention sweep or on request):
  what (digest, size, paths), by whom, when and why. Whatever binds those bytes (a receipt,
  a completion receipt, an audit event) keeps its digest and still verifies; what needs the
  bytes themselves (re-verification, "still current") says it cannot be answered.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "MAX_PERIOD",
    "RETAINED",
    "RETAINED_BY_SWEEP",
    "Hold",
    "RetainedKind",
    "RetentionPolicy",
    "Tombstone",
    "expired",
    "holding",
    "sweepable",
    "utc_text",
]

RETAINED_BY_SWEEP = "retention"  # a tombstone's `deleted_by` when a sweep deleted the bytes
MAX_PERIOD = 100 * 365 * 86400.0  # a hundred years: longer is "for ever" (None)


class RetainedKind(StrEnum):
    """The kinds of evidence a project sets a retention period for."""

    CANDIDATES = "candidates"  # the bytes of candidates that never became authoritative
    VERIFIER_LOGS = "verifier_logs"  # the logs receipts name (`log_digest`)
    DELEGATIONS = "delegations"  # the evidence blobs of remote (A2A) delegations
    AUDIT_DETAIL = "audit_detail"  # the `data` of audit events (the chain keeps its digest)


RETAINED: tuple[str, ...] = tuple(k.value for k in RetainedKind)


@dataclass(frozen=True)
class RetentionPolicy:
    """Seconds each kind is kept after it was made (after a delegation's last change);
    None keeps it for ever."""

    candidates: float | None = None
    verifier_logs: float | None = None
    delegations: float | None = None
    audit_detail: float | None = None

    def period(self, kind: RetainedKind) -> float | None:
        value: float | None = getattr(self, kind.value)
        return value

    @classmethod
    def checked(cls, periods: Mapping[str, float | None]) -> RetentionPolicy:
        """A policy from untrusted periods: known kinds only, each None or 0..MAX_PERIOD seconds."""
        unknown = set(periods) - set(RETAINED)
        if unknown:
            raise ValueError(f"unknown retention kinds {sorted(unknown)}; known: {list(RETAINED)}")
        for kind, value in periods.items():
            if value is None:
                continue
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not number or not math.isfinite(value) or not 0 <= value <= MAX_PERIOD:
                raise ValueError(f"retention {kind} is a number of seconds in 0..{MAX_PERIOD:g}, or null")
        return cls(**{k: (None if v is None else float(v)) for k, v in periods.items()})


@dataclass(frozen=True)
class Hold:
    """A legal hold on a task (`task_id`) or on its whole project (`task_id` None)."""

    id: str
    project_id: str
    task_id: str | None
    reason: str
    placed_by: str
    placed_at: float
    released_at: float | None = None
    released_by: str | None = None
    release_reason: str | None = None

    @property
    def live(self) -> bool:
        return self.released_at is None

    def covers(self, project_id: str, task_id: str | None) -> bool:
        """Whether this hold keeps what belongs to `task_id` of `project_id` (None: the
        project's evidence of no task)."""
        if not self.live or self.project_id != project_id:
            return False
        return self.task_id is None or self.task_id == task_id


def holding(holds: Iterable[Hold], project_id: str, task_ids: Iterable[str | None]) -> Hold | None:
    """The first live hold that covers any of `task_ids` in `project_id` (None: no hold)."""
    wanted = list(task_ids)
    for hold in holds:
        if any(hold.covers(project_id, t) for t in wanted):
            return hold
    return None


def expired(period: float | None, since: float, now: float) -> bool:
    """Made at `since`, kept for `period` seconds: is it past its period at `now`?"""
    return period is not None and since + period <= now


def sweepable(
    period: float | None,
    since: float,
    now: float,
    holds: Iterable[Hold],
    project_id: str,
    task_id: str | None,
) -> bool:
    """Past its period and under no hold: a hold wins over retention."""
    return expired(period, since, now) and holding(holds, project_id, [task_id]) is None


@dataclass(frozen=True)
class Tombstone:
    """Bytes that were deleted: which (digest, size, the project's paths that named them), of
    what (`subject`: a candidate, a receipt, a delegation, or an artifact path), by whom
    (a principal id, or `retention` for a sweep), when and why."""

    project_id: str
    digest: str
    size: int
    paths: tuple[str, ...]
    subject: str
    reason: str
    deleted_by: str
    deleted_at: float

    def text(self) -> str:
        """What every face says instead of the bytes: `bytes deleted <when> by <who>: <reason>`."""
        return f"bytes deleted {utc_text(self.deleted_at)} by {self.deleted_by}: {self.reason}"


def utc_text(seconds: float) -> str:
    """Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian, UTC), with no
    clock module: the days-to-civil conversion of H. Hinnant's `chrono` algorithms."""
    whole = math.floor(seconds)
    days, rest = divmod(whole, 86400)
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    return f"{year:04d}-{month:02d}-{day:02d}T{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}Z"
