"""Refused completions in plain words: what each failed predicate means, and how to recover.

The recovery hints are docs/reasons.md's **Recover:** sentences (a test keeps them equal)."""

from __future__ import annotations

from collections.abc import Mapping

from studiolo.core.reasons import Reason

__all__ = ["EXPLANATIONS", "explain"]

EXPLANATIONS: Mapping[Reason, tuple[str, str]] = {
    Reason.TASK_NOT_FOUND: (
        "The task does not exist or this agent may not read it.",
        "check the task id and the project; ask an admin for a `read` grant.",
    ),
    Reason.TASK_NOT_ACTIVE: (
        "The task was already completed or cancelled.",
        "nothing to do on this task; read its completion (`GET /v1/tasks/{t}`) or pick other work.",
    ),
    Reason.CALLER_NOT_ATTEMPT_OWNER: (
        "The attempt belongs to another principal.",
        "use your own attempt; claim the task if it is free.",
    ),
    Reason.ATTEMPT_SUPERSEDED: (
        "The attempt is no longer the task's current one, or the fence is old.",
        "your work is obsolete; read the handoff, claim again if the task is open, rebase and resubmit.",
    ),
    Reason.LEASE_EXPIRED: (
        "The attempt's lease had run out at the commit point.",
        "claim again (a new attempt and fence), then resubmit; heartbeat more often.",
    ),
    Reason.CANDIDATE_NOT_BOUND: (
        "The candidate belongs to another attempt or task.",
        "submit the candidate from the attempt that completes.",
    ),
    Reason.SCOPE_VIOLATION: (
        "The candidate writes a path outside the contract's scope.",
        "drop the out-of-scope files, or ask an admin to `migrate` the contract.",
    ),
    Reason.NOT_AUTHORIZED: (
        "The agent lacked a live complete grant, or a write grant covering every path.",
        "a legitimate change of authority; retrying faster is not recovery.",
    ),
    Reason.CONTRACT_MISMATCH: (
        "The request named a contract hash that is not the task's pinned contract.",
        "read the task's current contract, re-verify under it, resubmit.",
    ),
    Reason.DEPENDENCY_STALE: (
        "A file or collection the candidate read has changed since.",
        "rebase on the current revisions, submit a new candidate, have it verified again.",
    ),
    Reason.TARGET_BASE_STALE: (
        "Someone else wrote a target file after the candidate's base revision.",
        "merge with the current content, resubmit with new bases, re-verify.",
    ),
    Reason.PATH_CONFLICT: (
        "Publishing the candidate would make a path both a file and a directory.",
        "delete the file (or the files under the directory) in the same candidate, or write "
        "elsewhere; resubmit, re-verify.",
    ),
    Reason.EVIDENCE_UNTRUSTED: (
        "A cited receipt is unknown, badly signed, or from a verifier not admitted for its checker.",
        "obtain receipts from an admitted verifier.",
    ),
    Reason.EVIDENCE_NOT_BOUND: (
        "A cited receipt is about another task, attempt, contract or candidate.",
        "have the exact candidate verified.",
    ),
    Reason.EVIDENCE_NOT_SEPARATE: (
        "A cited pass was computed where the candidate's code ran, and the criterion forbids that.",
        "have the candidate checked by a checker whose kind is `separate` (e.g. `outputs`), "
        "or an admin migrates the contract.",
    ),
    Reason.EVIDENCE_MISSING: (
        "A required criterion has no trusted, bound receipt.",
        "wait for the verifier (`GET /v1/verifications`), then cite its receipt.",
    ),
    Reason.EVIDENCE_FAILED: (
        "A verifier reported that a required criterion fails.",
        "fix the work, submit a new candidate, have it verified.",
    ),
}


def explain(code: str) -> tuple[str, str]:
    """(what failed, how to recover) for a reason code; an unknown code is shown as is."""
    try:
        return EXPLANATIONS[Reason(code)]
    except ValueError:
        return (code, "")
