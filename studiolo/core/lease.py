"""Attempt liveness, the one rule: an attempt is live while it is active, was issued by the
authority's current incarnation, and its lease deadline is still ahead on the authority clock.

The predicate (`lease_expired`), claims and heartbeats, the task views and the dashboard all
ask these two functions; the store's conditional lease update is the same rule in SQL
(`store.work.LIVE_ATTEMPT_SQL`; `tests/store/test_liveness.py` checks the two agree)."""

from __future__ import annotations

from studiolo.core.enums import AttemptStatus
from studiolo.core.model import Attempt

__all__ = ["is_live", "lease_holds"]


def lease_holds(attempt: Attempt, incarnation: str, now: float) -> bool:
    """Whether the attempt's lease runs at `now` (its status aside): issued by this
    incarnation (a restore starts a new one, ending every older lease) and not yet past."""
    return attempt.incarnation == incarnation and now < attempt.lease_deadline


def is_live(attempt: Attempt, incarnation: str, now: float) -> bool:
    """Whether the attempt is live: active and its lease holds."""
    return attempt.status is AttemptStatus.ACTIVE and lease_holds(attempt, incarnation, now)
