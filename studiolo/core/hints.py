"""The one hint table: for every reason code, what it means and how to recover.

docs/reasons.md's **Recover:** sentences are `recover` (a test checks every section against
this table, and that the table names exactly the documented codes); the MCP face's refusal
hints are `brief` (one line, naming MCP tools); the dashboard explains a refused completion
with `meaning` and `recover`. Change a hint here, then the docs page the test points at."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from studiolo.core.reasons import ErrorReason, Reason

__all__ = ["HINTS", "Hint", "hint_of"]


@dataclass(frozen=True)
class Hint:
    """How to read one reason code."""

    brief: str  # one line for an agent (MCP), at most 100 characters
    recover: str | None = None  # docs/reasons.md's **Recover:** sentence (None: the page has none)
    meaning: str = ""  # what failed, in plain words (the dashboard; the predicates only)


HINTS: Mapping[str, Hint] = {
    Reason.TASK_NOT_FOUND: Hint(
        brief="Check the task id (orient lists the open tasks); ask an admin for a read grant.",
        recover="check the task id and the project; ask an admin for a `read` grant.",
        meaning="The task does not exist or this agent may not read it.",
    ),
    Reason.TASK_NOT_ACTIVE: Hint(
        brief="The task is completed or cancelled: read it with get_task, or pick other work.",
        recover="nothing to do on this task; read its completion (`GET /v1/tasks/{t}`) or pick other work.",
        meaning="The task was already completed or cancelled.",
    ),
    Reason.CALLER_NOT_ATTEMPT_OWNER: Hint(
        brief="Use your own attempt; claim_task if the task is free.",
        recover="use your own attempt; claim the task if it is free.",
        meaning="The attempt belongs to another principal.",
    ),
    Reason.ATTEMPT_SUPERSEDED: Hint(
        brief="Another attempt holds the task (get_task shows whose): read_handoff, claim if open.",
        recover=(
            "your work is obsolete; read the handoff, claim again if the task is open, rebase and resubmit."
        ),
        meaning="The attempt is no longer the task's current one, or the fence is old.",
    ),
    Reason.LEASE_EXPIRED: Hint(
        brief="Claim again (a new attempt and fence), resubmit, and heartbeat more often.",
        recover="claim again (a new attempt and fence), then resubmit; heartbeat more often.",
        meaning="The attempt's lease had run out at the commit point.",
    ),
    Reason.CANDIDATE_NOT_BOUND: Hint(
        brief="Submit the candidate from the attempt that completes.",
        recover="submit the candidate from the attempt that completes.",
        meaning="The candidate belongs to another attempt or task.",
    ),
    Reason.SCOPE_VIOLATION: Hint(
        brief="Drop the files outside the contract's scope (get_task shows it), or ask an admin.",
        recover="drop the out-of-scope files, or ask an admin to `migrate` the contract.",
        meaning="The candidate writes a path outside the contract's scope.",
    ),
    Reason.NOT_AUTHORIZED: Hint(
        brief="A change of authority: ask an admin for the grant; retrying is not recovery.",
        recover="a legitimate change of authority; retrying faster is not recovery.",
        meaning="The agent lacked a live complete grant, or a write grant covering every path.",
    ),
    Reason.CONTRACT_MISMATCH: Hint(
        brief="Read the task's current contract (get_task), re-verify under it, resubmit.",
        recover="read the task's current contract, re-verify under it, resubmit.",
        meaning="The request named a contract hash that is not the task's pinned contract.",
    ),
    Reason.DEPENDENCY_STALE: Hint(
        brief="A file you read moved: checkout again, rebase, submit a new candidate, re-verify.",
        recover="rebase on the current revisions, submit a new candidate, have it verified again.",
        meaning="A file or collection the candidate read has changed since.",
    ),
    Reason.TARGET_BASE_STALE: Hint(
        brief="Someone else wrote a target: merge with the current content, resubmit, re-verify.",
        recover="merge with the current content, resubmit with new bases, re-verify.",
        meaning="Someone else wrote a target file after the candidate's base revision.",
    ),
    Reason.PATH_CONFLICT: Hint(
        brief="A path would be both a file and a directory: delete one side in your candidate.",
        recover=(
            "delete the file (or the files under the directory) in the same candidate, or write "
            "elsewhere; resubmit, re-verify."
        ),
        meaning="Publishing the candidate would make a path both a file and a directory.",
    ),
    Reason.EVIDENCE_UNTRUSTED: Hint(
        brief="Cite receipts from an admitted verifier (get_receipts).",
        recover="obtain receipts from an admitted verifier.",
        meaning="A cited receipt is unknown, badly signed, or from a verifier not admitted for its checker.",
    ),
    Reason.EVIDENCE_NOT_BOUND: Hint(
        brief="Have this exact candidate verified, then cite its receipts.",
        recover="have the exact candidate verified.",
        meaning="A cited receipt is about another task, attempt, contract or candidate.",
    ),
    Reason.EVIDENCE_NOT_SEPARATE: Hint(
        brief="This criterion needs a verdict computed away from your code (`outputs`).",
        recover=(
            "have the candidate checked by a checker whose kind is `separate` (e.g. `outputs`), "
            "or an admin migrates the contract."
        ),
        meaning="A cited pass was computed where the candidate's code ran, and the criterion forbids that.",
    ),
    Reason.EVIDENCE_MISSING: Hint(
        brief="Wait for the verifier (get_receipts) and cite its receipt for every criterion.",
        recover="wait for the verifier (`GET /v1/verifications`), then cite its receipt.",
        meaning="A required criterion has no trusted, bound receipt.",
    ),
    Reason.EVIDENCE_FAILED: Hint(
        brief="A check failed: fix the work, submit a new candidate, have it verified.",
        recover="fix the work, submit a new candidate, have it verified.",
        meaning="A verifier reported that a required criterion fails.",
    ),
    ErrorReason.REQUEST_ID_CONFLICT: Hint(
        brief="Use a fresh request id for a new completion request.",
        recover="use a fresh request id for a new request.",
    ),
    ErrorReason.INVALID_REQUEST: Hint(
        brief="Fix the request; the detail says what is wrong.",
        recover="fix the request; the `detail` says what is wrong.",
    ),
    ErrorReason.INVALID_PATH: Hint(brief="Use a relative path without '..', NUL or control characters."),
    ErrorReason.PAYLOAD_TOO_LARGE: Hint(brief="Send fewer or smaller files."),
    ErrorReason.UNAUTHENTICATED: Hint(
        brief="The token is missing, unknown or revoked: ask an admin for a new one."
    ),
    ErrorReason.NOT_FOUND: Hint(brief="Check the id; it does not exist or is not visible to you."),
    ErrorReason.REVISION_CONFLICT: Hint(
        brief="Read the current revision, merge, retry.", recover="read the current revision, merge, retry."
    ),
    ErrorReason.TASK_ALREADY_CLAIMED: Hint(
        brief="The task has a live attempt: pick other work or wait for its lease to expire.",
        recover="pick other work, or wait for the lease to expire.",
    ),
    ErrorReason.ATTEMPT_NOT_ACTIVE: Hint(
        brief="Your attempt is no longer live: claim_task again.", recover="claim again."
    ),
    ErrorReason.BLOB_MISSING: Hint(
        brief="Upload the bytes first (submit_candidate uploads inline files for you).",
        recover="`POST /v1/blobs` first.",
    ),
    ErrorReason.BYTES_DELETED: Hint(
        brief="These bytes were deleted (the detail says when, by whom, why): nothing can re-read them.",
        recover="nothing to retry.",
    ),
    ErrorReason.LEGAL_HOLD: Hint(
        brief="A legal hold keeps this evidence: a project admin must release the hold first.",
        recover="a project admin releases the hold first.",
    ),
    ErrorReason.UNKNOWN_CHECKER: Hint(brief="Name a checker `name@version` that the project admits."),
    ErrorReason.SIGNATURE_INVALID: Hint(brief="Sign the receipt with the verifier's registered key."),
    ErrorReason.VERIFIER_NOT_ADMITTED: Hint(
        brief="Only an admitted verifier may post receipts for that checker."
    ),
    ErrorReason.CONFLICT: Hint(brief="The name is taken: choose another."),
    ErrorReason.TOO_MANY_STREAMS: Hint(
        brief="Close an event stream you no longer follow; one per project is enough.",
        recover="close a stream you no longer follow; one stream per project is enough.",
    ),
    ErrorReason.OVERLOADED: Hint(
        brief="The server is busy and did nothing: retry after Retry-After seconds, with backoff.",
        recover="retry after `Retry-After` seconds, with backoff.",
    ),
    ErrorReason.METHOD_NOT_ALLOWED: Hint(brief="Use one of the HTTP methods the Allow header lists."),
    ErrorReason.INTERNAL_ERROR: Hint(
        brief="A bug on the server; retry once, then report it (an accepted result is not lost)."
    ),
    ErrorReason.COMPLETION_REJECTED: Hint(
        brief="Read `failed`: each entry names a predicate and its own hint."
    ),
    ErrorReason.UNTRUSTED_RESPONSE: Hint(
        brief="The server sent bytes or a path that must not be acted on: do not trust it.",
        recover="do not trust that server.",
    ),
    ErrorReason.UNREACHABLE: Hint(
        brief="The stdio server cannot reach STUDIOLO_URL: check the URL and that the service runs.",
        recover=(
            "check the URL and that the service is running, then retry (a completion retried with "
            "the same request id is an idempotent replay)."
        ),
    ),
}


def hint_of(code: str) -> Hint | None:
    """The hint for a reason code (None: not a code this package raises)."""
    return HINTS.get(code)
