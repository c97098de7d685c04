"""The tools' structured outputs that are not a wire model as is. Each is an object (MCP
structured content is one JSON object), built from the HTTP API's response models."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from studiolo.api import responses as s

__all__ = [
    "ArtifactContent",
    "ArtifactList",
    "Checkout",
    "Claimed",
    "Completed",
    "HandoffRead",
    "ReceiptList",
    "TaskEvents",
    "TaskList",
    "WorkspaceCandidate",
]


class TaskList(BaseModel):
    tasks: list[s.TaskSummaryOut]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null: no more")


class HandoffRead(BaseModel):
    """A task's latest handoff; `handoff` is null when nobody left one (a normal answer)."""

    task_id: str
    handoff: s.HandoffOut | None
    contract_current: bool | None = Field(description="whether the handoff's contract is the task's")
    artifacts: dict[str, s.HandoffRefOut] = Field(description="path → the revision left, and now")


class Claimed(BaseModel):
    attempt: s.AttemptOut
    contract_hash: str = Field(description="the contract you work under: pass it to complete_task")
    contract: s.ContractOut


class ArtifactList(BaseModel):
    artifacts: list[s.ArtifactOut]


class ArtifactContent(BaseModel):
    artifact: s.ArtifactOut
    encoding: Literal["utf-8", "base64"] | None = Field(description="None for a deleted path")
    content: str | None


class ReceiptList(BaseModel):
    candidate_id: str
    receipts: list[s.ReceiptOut]


class Completed(BaseModel):
    completion: s.CompletionOut
    replay: bool = Field(description="true when this request id was already accepted (nothing written)")


class TaskEvents(BaseModel):
    task_id: str
    events: list[s.EventOut]
    next_after: int = Field(description="pass as `after` to continue")


class Checkout(BaseModel):
    directory: str
    manifest: str
    prefix: str
    collection_revision: int
    files: dict[str, int] = Field(description="path → the revision written")
    overwritten: list[str] = Field(description="local changes discarded (overwrite=true)")


class WorkspaceCandidate(BaseModel):
    candidate: s.CandidateOut
    uploaded: list[str]
    deleted: list[str]
