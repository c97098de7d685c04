"""Door values as wire models, shared by every face (HTTP, MCP, A2A): the responses that are
not a domain value read attribute by attribute (those are
`Model.model_validate(value)`, see `studiolo.api.responses`)."""

from __future__ import annotations

from studiolo.api import responses as s
from studiolo.core.model import Receipt
from studiolo.service import ReceiptRead, TaskView

__all__ = ["receipt", "task_summary", "task_view"]


def receipt(r: Receipt | ReceiptRead) -> s.ReceiptOut:
    """The bindings as the verifier signed them, as one object (`body`); for a read, the
    bytes they bind that were deleted."""
    read = r if isinstance(r, ReceiptRead) else ReceiptRead(r)
    r = read.receipt
    return s.ReceiptOut(
        id=r.id,
        candidate_id=r.candidate_id,
        body=r.signed_body(),
        signature=r.signature,
        reused=r.reused,
        bytes_deleted=read.bytes_deleted,
        deleted_digests=[d.digest for d in read.deleted],
    )


def task_summary(v: TaskView) -> s.TaskSummaryOut:
    """The task's own fields and two of its view's: the strongest fact, and whether it still holds."""
    task = s.TaskOut.model_validate(v.task)
    return s.TaskSummaryOut(
        **dict(task), fact=v.fact, still_current=v.still_current, bytes_deleted=v.bytes_deleted
    )


def task_view(v: TaskView) -> s.TaskViewOut:
    return s.TaskViewOut.model_validate(
        {
            "task": task_summary(v),
            "attempts": v.attempts,
            "candidates": v.candidates,
            "receipts": [receipt(r) for r in v.receipts],
            "completion": v.completion,
            "rejections": v.rejections,
            "deleted": [s.TombstoneOut.of(d) for d in v.deleted],
        }
    )
