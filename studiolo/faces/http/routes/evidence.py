"""The evidence store's entrance: receipts from admitted verifiers, and their work queue."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from studiolo._exceptions import InvalidRequest
from studiolo.api import responses as s
from studiolo.api.requests import ReceiptIn, ReuseIn
from studiolo.api.verification import CandidateTree, VerificationItem
from studiolo.faces import render
from studiolo.faces.http.deps import Caller, Door
from studiolo.faces.http.operation import operation

__all__ = ["router"]

router = APIRouter()


@operation(router, "post_receipt")
def post_receipt(candidate_id: str, body: ReceiptIn, caller: Caller, door: Door) -> s.ReceiptOut:
    return render.receipt(door.submit_receipt(caller, candidate_id, body.body, body.signature))


@operation(router, "reuse_receipt")
def reuse_receipt(candidate_id: str, body: ReuseIn, caller: Caller, door: Door) -> s.ReceiptOut:
    return render.receipt(door.reuse_receipt(caller, candidate_id, body.receipt_id))


@operation(router, "candidate_tree")
def candidate_tree(candidate_id: str, caller: Caller, door: Door) -> CandidateTree:
    return door.candidate_tree(caller, candidate_id)


@operation(router, "receipts")
def list_receipts(candidate_id: str, caller: Caller, door: Door) -> list[s.ReceiptOut]:
    return [render.receipt(r) for r in door.receipt_reads(caller, candidate_id)]


@operation(router, "receipt")
def show_receipt(receipt_id: str, caller: Caller, door: Door) -> s.ReceiptOut:
    return render.receipt(door.receipt_read(caller, receipt_id))


@operation(router, "verifications")
def verifications(
    caller: Caller,
    door: Door,
    project_id: Annotated[str | None, Query(max_length=100, description="default: the caller's")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
) -> list[VerificationItem]:
    project = project_id or caller.project_id
    if project is None:
        raise InvalidRequest("a service admin names the project: ?project_id=")
    return door.verification_queue(caller, project, limit)
