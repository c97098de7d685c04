"""Response bodies: what a face shows of the domain (no token hashes, no internal fields).

Each model reads the domain value's attributes directly (`Model.model_validate(value)`,
`from_attributes`), so a field is spelled once here and once in `studiolo.core.model`; where a
model differs from its value, a one-line annotation says how. Models are built on first use
(`defer_build`): a CLI command pays only for the models it reads.

Times are seconds since the Unix epoch (floats); receipt `issued_at` is integer ms (signed).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict

from studiolo.core.enums import FileMode

__all__ = [
    "ArtifactOut",
    "AttemptOut",
    "AuditOut",
    "BlobOut",
    "CandidateOut",
    "CheckerOut",
    "CollectedOut",
    "CollectionOut",
    "CompletionOut",
    "ContractOut",
    "DelegationOut",
    "EventOut",
    "GitImportOut",
    "GitMirrorOut",
    "GitStatusOut",
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
    "ReconfirmedOut",
    "RemoteOrgOut",
    "RevokedOut",
    "TaskOut",
    "TaskSummaryOut",
    "TaskViewOut",
]


def _sorted(value: Any) -> Any:
    return sorted(value) if isinstance(value, set | frozenset) else value


def _criteria_map(value: Any) -> Any:
    """A contract's criteria (a tuple of `Criterion`) as the wire's id → checker map."""
    return {c.id: c.checker for c in value} if isinstance(value, tuple) else value


# A set in the domain is a sorted list on the wire (the same bytes for the same value).
SortedNames = Annotated[list[str], BeforeValidator(_sorted)]


class _Out(BaseModel):
    model_config = ConfigDict(from_attributes=True, defer_build=True)


class ProjectOut(_Out):
    id: str
    name: str
    created_at: float


class PrincipalOut(_Out):
    id: str
    project_id: str | None
    name: str
    kind: str
    public_key: str | None


class IssuedOut(_Out):
    principal: PrincipalOut
    token: str


class RevokedOut(_Out):
    revoked: int


class ReconfirmedOut(_Out):
    """What a reconfirmation vouched for (`studiolo.service.reconfirm.Reconfirmed`)."""

    principal_id: str
    tokens: list[str]
    admissions: list[str]
    grants: list[str]
    key_id: str | None
    event_seq: int | None


class CollectedOut(_Out):
    collected: int


class GrantOut(_Out):
    id: str
    project_id: str
    principal_id: str
    actions: SortedNames
    scope: list[str]
    created_at: float
    revoked_at: float | None
    live: bool


class PolicyOut(_Out):
    project_id: str
    version: int
    text: str
    digest: str
    created_at: float


class CheckerOut(_Out):
    project_id: str
    name: str
    version: str
    ref: str
    kind: str
    config: dict[str, Any]
    verifiers: SortedNames


class ContractOut(_Out):
    task_id: str
    criteria: Annotated[dict[str, str], BeforeValidator(_criteria_map)]  # id → checker
    scope: list[str]
    policy_version: int
    requires_deployment: bool
    allow_evidence_reuse: bool
    separate_verdict: list[str] = []  # criteria whose passes must come from a separate verdict


class TaskOut(_Out):
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


class AttemptOut(_Out):
    id: str
    task_id: str
    principal_id: str
    fence: int
    lease_deadline: float
    status: str
    created_at: float


class CandidateOut(_Out):
    id: str
    task_id: str
    attempt_id: str
    files: dict[str, str | None]
    bases: dict[str, int]
    file_deps: dict[str, int]
    collection_deps: dict[str, int]
    digest: str
    dependency_digest: str
    write_set: SortedNames
    created_at: float


class ReceiptOut(_Out):
    id: str
    candidate_id: str
    body: dict[str, Any]
    signature: str
    reused: bool


class CompletionOut(_Out):
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


class EventOut(_Out):
    seq: int
    project_id: str | None
    kind: str
    actor: str | None
    subject: str | None
    data: dict[str, Any]
    at: float
    prev_hash: str
    hash: str


class TaskViewOut(_Out):
    task: TaskSummaryOut
    attempts: list[AttemptOut]
    candidates: list[CandidateOut]
    receipts: list[ReceiptOut]
    completion: CompletionOut | None
    rejections: list[EventOut]


class ArtifactOut(_Out):
    project_id: str
    path: str
    revision: int
    digest: str | None
    deleted: bool
    updated_at: float
    mode: FileMode = FileMode.REGULAR  # absent from a server before migration 0012


class CollectionOut(_Out):
    project_id: str
    prefix: str
    revision: int


class BlobOut(_Out):
    digest: str
    size: int


class ObservationOut(_Out):
    id: str
    project_id: str
    target: str
    revision: int | None
    digest: str | None
    kind: str
    observed_at: float
    observer_id: str


class HandoffOut(_Out):
    id: str
    task_id: str
    attempt_id: str
    principal_id: str
    contract_hash: str
    artifacts: dict[str, int]
    obligations: list[str]
    notes: str
    created_at: float


class HandoffRefOut(_Out):
    revision: int
    current_revision: int
    current: bool


class HandoffViewOut(_Out):
    handoff: HandoffOut
    contract_current: bool
    artifacts: dict[str, HandoffRefOut]


class OrientationOut(_Out):
    principal: PrincipalOut
    project_id: str
    policy: PolicyOut | None
    grants: list[GrantOut]
    open_tasks: list[TaskOut]
    my_attempts: list[AttemptOut]


class AuditOut(_Out):
    ok: bool
    events: int
    head: str
    first_bad_seq: int | None
    problem: str


class HealthOut(_Out):
    status: str
    version: str


class RemoteOrgOut(_Out):
    """A remote organisation's trust anchor (docs/a2a.md): its pinned keys, never its secrets."""

    id: str
    project_id: str
    name: str
    keys: dict[str, str]
    agent_id: str
    verifier_id: str
    checker: str
    target: str
    created_at: float
    revoked_at: float | None
    origins: list[str]


class DelegationOut(_Out):
    """A delegation to a remote agent and where its wait stands (docs/a2a.md)."""

    id: str
    project_id: str
    task_id: str
    org_id: str
    agent_url: str
    card_digest: str
    pinned: dict[str, str]
    attempt_id: str
    fence: int
    state: str
    remote_task_id: str | None
    remote_state: str | None
    since: float | None
    reason: str | None
    evidence: dict[str, Any]
    completion_id: str | None
    created_by: str
    created_at: float
    updated_at: float


class GitMirrorOut(_Out):
    name: str
    url: str
    pushed: str | None  # the branch commit it holds, as last pushed
    pushed_version: int
    error: str | None


class GitStatusOut(_Out):
    """The read rule: which ledger version the branch reflects, and whether it lags."""

    project_id: str
    branch: str
    commit: str | None
    published_version: int
    ledger_version: int
    pending: int
    current: bool
    notes_version: int
    checkpoint: str | None
    mirrors: list[GitMirrorOut] = []


class GitImportOut(_Out):
    version: int
    written: int
    deleted: int
    unchanged: int
    tree_digest: str
