"""Response bodies: what a face shows of the domain (no token hashes, no internal fields).

Times are seconds since the Unix epoch (floats); receipt `issued_at` is integer ms (signed).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

__all__ = [
    "ArtifactOut",
    "AttemptOut",
    "AuditOut",
    "BlobOut",
    "CandidateOut",
    "CandidateTreeOut",
    "CheckerOut",
    "CollectionOut",
    "CompletionOut",
    "ContractOut",
    "EventOut",
    "GrantOut",
    "HandoffOut",
    "HandoffRefOut",
    "HandoffViewOut",
    "HealthOut",
    "IssuedOut",
    "ObservationOut",
    "OrientationOut",
    "PolicyOut",
    "PrincipalOut",
    "ProjectOut",
    "ReceiptOut",
    "RevokedOut",
    "TaskOut",
    "TaskSummaryOut",
    "TaskViewOut",
    "TreeEntryOut",
    "VerificationOut",
]


class ProjectOut(BaseModel):
    id: str
    name: str
    created_at: float


class PrincipalOut(BaseModel):
    id: str
    project_id: str | None
    name: str
    kind: str
    public_key: str | None


class IssuedOut(BaseModel):
    principal: PrincipalOut
    token: str


class RevokedOut(BaseModel):
    revoked: int


class GrantOut(BaseModel):
    id: str
    project_id: str
    principal_id: str
    actions: list[str]
    scope: list[str]
    created_at: float
    revoked_at: float | None
    live: bool


class PolicyOut(BaseModel):
    project_id: str
    version: int
    text: str
    digest: str
    created_at: float


class CheckerOut(BaseModel):
    project_id: str
    name: str
    version: str
    ref: str
    kind: str
    config: dict[str, Any]
    verifiers: list[str]


class ContractOut(BaseModel):
    task_id: str
    criteria: dict[str, str]
    scope: list[str]
    policy_version: int
    requires_deployment: bool
    allow_evidence_reuse: bool


class TaskOut(BaseModel):
    id: str
    project_id: str
    title: str
    description: str
    contract: ContractOut
    contract_hash: str
    status: str
    current_attempt_id: str | None
    fence: int
    created_at: float
    completed_at: float | None


class TaskSummaryOut(TaskOut):
    fact: str
    still_current: bool | None


class AttemptOut(BaseModel):
    id: str
    task_id: str
    principal_id: str
    fence: int
    lease_deadline: float
    status: str
    created_at: float


class CandidateOut(BaseModel):
    id: str
    task_id: str
    attempt_id: str
    files: dict[str, str | None]
    bases: dict[str, int]
    file_deps: dict[str, int]
    collection_deps: dict[str, int]
    digest: str
    dependency_digest: str
    write_set: list[str]
    created_at: float


class ReceiptOut(BaseModel):
    id: str
    candidate_id: str
    body: dict[str, Any]
    signature: str
    reused: bool


class CompletionOut(BaseModel):
    id: str
    task_id: str
    attempt_id: str
    candidate_id: str
    request_id: str
    principal_id: str
    commit_version: int
    receipt: dict[str, Any]
    signature: str
    revisions: dict[str, int]
    created_at: float


class EventOut(BaseModel):
    seq: int
    project_id: str | None
    kind: str
    actor: str | None
    subject: str | None
    data: dict[str, Any]
    at: float
    prev_hash: str
    hash: str


class TaskViewOut(BaseModel):
    task: TaskSummaryOut
    attempts: list[AttemptOut]
    candidates: list[CandidateOut]
    receipts: list[ReceiptOut]
    completion: CompletionOut | None
    rejections: list[EventOut]


class ArtifactOut(BaseModel):
    project_id: str
    path: str
    revision: int
    digest: str | None
    deleted: bool
    updated_at: float


class CollectionOut(BaseModel):
    project_id: str
    prefix: str
    revision: int


class BlobOut(BaseModel):
    digest: str
    size: int


class ObservationOut(BaseModel):
    id: str
    project_id: str
    target: str
    revision: int | None
    digest: str | None
    kind: str
    observed_at: float
    observer_id: str


class HandoffOut(BaseModel):
    id: str
    task_id: str
    attempt_id: str
    principal_id: str
    contract_hash: str
    artifacts: dict[str, int]
    obligations: list[str]
    notes: str
    created_at: float


class HandoffRefOut(BaseModel):
    revision: int
    current_revision: int
    current: bool


class HandoffViewOut(BaseModel):
    handoff: HandoffOut
    contract_current: bool
    artifacts: dict[str, HandoffRefOut]


class VerificationOut(BaseModel):
    project_id: str
    task_id: str
    attempt_id: str
    candidate_id: str
    contract_hash: str
    criterion: str
    checker: str
    checker_kind: str
    checker_config: dict[str, Any]
    candidate_digest: str
    dependency_digest: str
    files: dict[str, str | None]
    bases: dict[str, int]
    file_deps: dict[str, int]
    collection_deps: dict[str, int]
    issuer: str


class TreeEntryOut(BaseModel):
    path: str
    digest: str
    revision: int | None
    source: str


class CandidateTreeOut(BaseModel):
    candidate_id: str
    candidate_digest: str
    dependency_digest: str
    entries: list[TreeEntryOut]
    unreproducible: list[str]
    withheld: list[str]


class OrientationOut(BaseModel):
    principal: PrincipalOut
    project_id: str
    policy: PolicyOut | None
    grants: list[GrantOut]
    open_tasks: list[TaskOut]
    my_attempts: list[AttemptOut]


class AuditOut(BaseModel):
    ok: bool
    events: int
    head: str
    first_bad_seq: int | None
    problem: str


class HealthOut(BaseModel):
    status: str
    version: str
