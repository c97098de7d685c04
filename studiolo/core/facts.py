"""The strongest established fact about a task (SPEC §2), and whether it is still current."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from studiolo.core.model import TaskStatus

__all__ = ["Fact", "TaskEvidence", "strongest_fact"]


class Fact(StrEnum):
    OPEN = "open"
    CLAIMED = "claimed"
    CANDIDATE_PREPARED = "candidate prepared"
    VERIFIED = "verified"
    ACCEPTED = "accepted"
    DEPLOYED = "deployed"
    CANCELLED = "cancelled"


@dataclass(frozen=True, kw_only=True)
class TaskEvidence:
    """What the ledger can show about a task, gathered by the coordinator."""

    status: TaskStatus
    has_live_attempt: bool
    has_candidate: bool  # the current attempt has prepared bytes
    verified: bool  # all required criteria pass for some candidate of the current attempt
    requires_deployment: bool
    deployed: bool  # an observation of the accepted revisions, kind `deployed`


def strongest_fact(ev: TaskEvidence) -> Fact:
    if ev.status is TaskStatus.CANCELLED:
        return Fact.CANCELLED
    if ev.status is TaskStatus.COMPLETED:
        return Fact.DEPLOYED if ev.requires_deployment and ev.deployed else Fact.ACCEPTED
    if ev.verified:
        return Fact.VERIFIED
    if ev.has_candidate:
        return Fact.CANDIDATE_PREPARED
    return Fact.CLAIMED if ev.has_live_attempt else Fact.OPEN
