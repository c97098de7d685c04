"""The one place the MCP face maps the error tree: a `StudioloError` becomes a tool result
with `isError: true` whose text says the reason, every failed predicate in order and one
recovery hint per reason (and the refusal's details, when it carries any). Protocol errors
stay protocol errors.

A refusal carries no `structuredContent`: clients validate structured content against the
tool's `outputSchema` even when `isError` is true (the TypeScript SDK v1 does, and throws),
and a refusal is not the tool's output. The same facts as JSON, a `Refusal`, are in the
result's `_meta` under `REFUSAL_META`, for clients that want them as data.

`HINTS` is docs/reasons.md's "Recover" advice in one line per code (a test keeps the two in
step: every documented code has a hint here, and no hint names an undocumented code).
"""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict, Field

from studiolo._exceptions import StudioloError

__all__ = ["HINTS", "REFUSAL_META", "Hint", "Refusal", "answer", "refusal", "structured"]

REFUSAL_META = "studiolo/refusal"

HINTS: dict[str, str] = {
    # the completion predicates, in evaluation order
    "task_not_found": "Check the task id (orient lists the open tasks); ask an admin for a read grant.",
    "task_not_active": "The task is completed or cancelled: read it with get_task, or pick other work.",
    "caller_not_attempt_owner": "Use your own attempt; claim_task if the task is free.",
    "attempt_superseded": (
        "Another attempt holds the task (get_task shows whose): read_handoff, claim if open."
    ),
    "lease_expired": "Claim again (a new attempt and fence), resubmit, and heartbeat more often.",
    "candidate_not_bound": "Submit the candidate from the attempt that completes.",
    "scope_violation": "Drop the files outside the contract's scope (get_task shows it), or ask an admin.",
    "not_authorized": "A change of authority: ask an admin for the grant; retrying is not recovery.",
    "contract_mismatch": "Read the task's current contract (get_task), re-verify under it, resubmit.",
    "dependency_stale": "A file you read moved: checkout again, rebase, submit a new candidate, re-verify.",
    "target_base_stale": "Someone else wrote a target: merge with the current content, resubmit, re-verify.",
    "path_conflict": "A path would be both a file and a directory: delete one side in your candidate.",
    "evidence_untrusted": "Cite receipts from an admitted verifier (get_receipts).",
    "evidence_not_bound": "Have this exact candidate verified, then cite its receipts.",
    "evidence_not_separate": "This criterion needs a verdict computed away from your code (`outputs`).",
    "evidence_missing": "Wait for the verifier (get_receipts) and cite its receipt for every criterion.",
    "evidence_failed": "A check failed: fix the work, submit a new candidate, have it verified.",
    # other reasons
    "request_id_conflict": "Use a fresh request id for a new completion request.",
    "invalid_request": "Fix the request; the detail says what is wrong.",
    "invalid_path": "Use a relative path without '..', NUL or control characters.",
    "payload_too_large": "Send fewer or smaller files.",
    "unauthenticated": "The token is missing, unknown or revoked: ask an admin for a new one.",
    "not_found": "Check the id; it does not exist or is not visible to you.",
    "revision_conflict": "Read the current revision, merge, retry.",
    "task_already_claimed": "The task has a live attempt: pick other work or wait for its lease to expire.",
    "attempt_not_active": "Your attempt is no longer live: claim_task again.",
    "blob_missing": "Upload the bytes first (submit_candidate uploads inline files for you).",
    "unknown_checker": "Name a checker `name@version` that the project admits.",
    "signature_invalid": "Sign the receipt with the verifier's registered key.",
    "verifier_not_admitted": "Only an admitted verifier may post receipts for that checker.",
    "conflict": "The name is taken: choose another.",
    "method_not_allowed": "Use one of the HTTP methods the Allow header lists.",
    "internal_error": "A bug on the server; retry once, then report it (an accepted result is not lost).",
    "completion_rejected": "Read `failed`: each entry names a predicate and its own hint.",
    "too_many_streams": "Close an event stream you no longer follow; one per project is enough.",
    "overloaded": "The server is busy and did nothing: retry after Retry-After seconds, with backoff.",
    "unreachable": "The stdio server cannot reach STUDIOLO_URL: check the URL and that the service runs.",
    "untrusted_response": "The server sent bytes or a path that must not be acted on: do not trust it.",
}
_UNKNOWN = "See docs/reasons.md for this reason code."


class Hint(BaseModel):
    reason: str
    hint: str


class Refusal(BaseModel):
    """A refusal: `reason` is the first of `failed` (every failed predicate, in order)."""

    model_config = ConfigDict(extra="allow")  # whatever else the error carries (`details`)

    reason: str
    failed: list[str]
    hints: list[Hint] = Field(description="one recovery hint per failed reason, in order")
    detail: str


def refusal(exc: StudioloError) -> CallToolResult:
    """The refusal as text for the model and as a `Refusal` in `_meta` (no structured content)."""
    carried = exc.to_dict()
    details = getattr(exc, "details", None)
    if details and "details" not in carried:
        carried["details"] = details
    carried = json.loads(json.dumps(carried, default=str))  # plain JSON, whatever the error holds
    hints = [Hint(reason=r, hint=HINTS.get(r, _UNKNOWN)) for r in exc.failed]
    body = Refusal.model_validate({**carried, "hints": hints}).model_dump(mode="json")
    lines = [
        f"refused: {exc.reason} ({exc.detail})",
        f"failed: {', '.join(exc.failed)}",
        *(f"- {h.reason}: {h.hint}" for h in hints),
    ]
    if body.get("details"):
        lines.append("details: " + json.dumps(body["details"], sort_keys=True, default=str))
    text = TextContent(type="text", text="\n".join(lines))
    return CallToolResult(content=[text], is_error=True, _meta={REFUSAL_META: body})


def structured(model: BaseModel) -> CallToolResult:
    """A successful tool result: the model as structured content, and as JSON text."""
    data = model.model_dump(mode="json")
    text = TextContent(type="text", text=model.model_dump_json())
    return CallToolResult(content=[text], structured_content=data)


def answer(work: Callable[[], BaseModel]) -> CallToolResult:
    """Run one tool's work: its model, or a refusal for any `StudioloError` (and for a
    service the stdio server cannot reach)."""
    try:
        return structured(work())
    except StudioloError as exc:
        return refusal(exc)
    except httpx.TransportError as exc:  # the stdio server's link to the service
        return refusal(StudioloError(f"the service is unreachable: {exc}", reason="unreachable"))
