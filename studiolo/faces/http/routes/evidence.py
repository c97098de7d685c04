"""The evidence store's entrance: receipts from admitted verifiers, and their work queue."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from studiolo._exceptions import InvalidRequest
from studiolo.api import responses as s
from studiolo.api.requests import ReceiptIn, ReuseIn
from studiolo.api.verification import CandidateTree, VerificationItem
from studiolo.core.model import Principal
from studiolo.faces import render
from studiolo.faces.http.operation import operation
from studiolo.service import Coordinator

__all__: list[str] = []  # the functions are registered by name (`operation`)


@operation("post_receipt")
def post_receipt(candidate_id: str, body: ReceiptIn, caller: Principal, door: Coordinator) -> s.ReceiptOut:
    return render.receipt(door.submit_receipt(caller, candidate_id, body.body, body.signature))


@operation("reuse_receipt")
def reuse_receipt(candidate_id: str, body: ReuseIn, caller: Principal, door: Coordinator) -> s.ReceiptOut:
    return render.receipt(door.reuse_receipt(caller, candidate_id, body.receipt_id))


@operation("candidate_tree")
def candidate_tree(candidate_id: str, caller: Principal, door: Coordinator) -> CandidateTree:
    return door.candidate_tree(caller, candidate_id)


@operation("receipts")
def list_receipts(candidate_id: str, caller: Principal, door: Coordinator) -> list[s.ReceiptOut]:
    return [render.receipt(r) for r in door.receipt_reads(caller, candidate_id)]


@operation("receipt")
def show_receipt(receipt_id: str, caller: Principal, door: Coordinator) -> s.ReceiptOut:
    return render.receipt(door.receipt_read(caller, receipt_id))


@operation("verifications")
def verifications(
    caller: Principal,
    door: Coordinator,
    project_id: Annotated[str | None, Field(max_length=100, description="default: the caller's")] = None,
    limit: Annotated[int, Field(ge=1, le=1000)] = 50,
) -> list[VerificationItem]:
    project = project_id or caller.project_id
    if project is None:
        raise InvalidRequest("a service admin names the project: ?project_id=")
    return door.verification_queue(caller, project, limit)
