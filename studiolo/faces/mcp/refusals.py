"""The one place the MCP face maps the error tree: a `StudioloError` becomes a tool result
with `isError: true` whose text says the reason, every failed predicate in order and one
recovery hint per reason (and the refusal's details, when it carries any). Protocol errors
stay protocol errors.

A refusal carries no `structuredContent`: clients validate structured content against the
tool's `outputSchema` even when `isError` is true (the TypeScript SDK v1 does, and throws),
and a refusal is not the tool's output. The same facts as JSON, a `Refusal`, are in the
result's `_meta` under `REFUSAL_META`, for clients that want them as data.

`HINTS` is the `brief` column of the one hint table (`core/hints.py`): docs/reasons.md's
"Recover" advice in one line per code, naming this face's tools.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict, Field

from studiolo._exceptions import StudioloError
from studiolo.core.hints import HINTS as CORE_HINTS
from studiolo.core.reasons import ErrorReason

__all__ = ["HINTS", "REFUSAL_META", "Hint", "Refusal", "answer", "refusal", "structured"]

REFUSAL_META = "studiolo/refusal"

HINTS: dict[str, str] = {code: hint.brief for code, hint in CORE_HINTS.items()}
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
        return refusal(StudioloError(f"the service is unreachable: {exc}", reason=ErrorReason.UNREACHABLE))
