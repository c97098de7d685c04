"""A refusal is an `isError` result with no structured content: the reason, the failed
predicates and the hints in its text, the same as data in `_meta`, and whatever else the
error carries (the core's per-predicate `details`) passed through as is."""

from __future__ import annotations

from mcp_types import TextContent

from studiolo._exceptions import CompletionRejected
from studiolo.faces.mcp.refusals import REFUSAL_META, refusal


def test_a_refusal_carries_the_errors_details_in_text_and_meta() -> None:
    detail = {"reason": "attempt_superseded", "facts": {"owner_name": "agent-b", "fence": 2}}
    exc = CompletionRejected(["attempt_superseded", "lease_expired"], details=[detail])
    result = refusal(exc)
    assert result.is_error and result.structured_content is None
    body = (result.meta or {})[REFUSAL_META]
    assert body["reason"] == "attempt_superseded"
    assert body["failed"] == ["attempt_superseded", "lease_expired"]
    assert body["details"] == [detail]
    assert [h["reason"] for h in body["hints"]] == body["failed"]
    (text,) = result.content
    assert isinstance(text, TextContent)
    assert "failed: attempt_superseded, lease_expired" in text.text
    assert '"owner_name": "agent-b"' in text.text and "get_task shows whose" in text.text


def test_a_refusal_without_details_has_none() -> None:
    result = refusal(CompletionRejected(["evidence_missing"]))
    body = (result.meta or {})[REFUSAL_META]
    assert "details" not in body and "details:" not in str(result.content)
