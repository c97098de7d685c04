"""Response bodies: what a face shows of the domain (no token hashes, no internal fields).

Each model reads the domain value's attributes directly (`Model.model_validate(value)`,
`from_attributes`), so a field is spelled once here and once in `studiolo.core.model`; where a
model differs from its value, a one-line annotation says how. Models are built on first use
(`defer_build`): a CLI command pays only for the models it reads. The models of a task and
its attempts are defined here; the rest (`_late_responses`) are defined on first access
(`__getattr__`), so that `studiolo task show` does not create two dozen classes it never reads.

Times are seconds since the Unix epoch (floats); receipt `issued_at` is integer ms (signed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

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
    "HoldOut",
    "IssuedOut",
    "ObservationOut",
    "OrientationOut",
    "PolicyOut",
    "PrincipalOut",
    "ProjectOut",
    "ReceiptOut",
    "ReconfirmedOut",
    "RemoteOrgOut",
    "RetentionOut",
    "RetentionPolicyOut",
    "RevokedOut",
    "SweepReportOut",
    "TaskOut",
    "TaskSummaryOut",
    "TaskViewOut",
    "TombstoneOut",
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
    # set when bytes its candidates name were deleted: "still current" and re-verification
    # cannot be answered for them, and this says why (`bytes deleted <when> by <who>: <reason>`)
    bytes_deleted: str | None = None


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
    modes: dict[str, FileMode] = {}  # written path → mode, executable paths only


class ReceiptOut(_Out):
    id: str
    candidate_id: str
    body: dict[str, Any]
    signature: str
    reused: bool
    # The bytes it binds that were deleted (its candidate's files, its log): when, by whom and
    # why; the signature still verifies, re-verification is impossible. None and [] when
    # nothing was. Digests, not tombstones: a task view lists those once, in `deleted`.
    bytes_deleted: str | None = None
    deleted_digests: list[str] = []


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


class TombstoneOut(_Out):
    """Deleted bytes: what, of what, by whom (`retention`: a sweep), when and why; `text` says it."""

    project_id: str
    digest: str
    size: int
    paths: list[str]
    subject: str
    reason: str
    deleted_by: str
    deleted_at: float
    text: str

    @classmethod
    def of(cls, stone: Any) -> TombstoneOut:
        fields = {k: getattr(stone, k) for k in cls.model_fields if k not in ("paths", "text")}
        return cls(**fields, paths=list(stone.paths), text=stone.text())


class TaskViewOut(_Out):
    task: TaskSummaryOut
    attempts: list[AttemptOut]
    candidates: list[CandidateOut]
    receipts: list[ReceiptOut]  # their signatures verify even when `deleted` names their bytes
    completion: CompletionOut | None
    rejections: list[EventOut]
    deleted: list[TombstoneOut] = []  # bytes the candidates name that were deleted


if TYPE_CHECKING:  # re-exported (`__all__`), defined on first access
    from studiolo.api._late_responses import (
        ArtifactOut,
        AuditOut,
        BlobOut,
        CheckerOut,
        CollectedOut,
        CollectionOut,
        DelegationOut,
        GitImportOut,
        GitMirrorOut,
        GitStatusOut,
        GrantOut,
        HandoffOut,
        HandoffRefOut,
        HandoffViewOut,
        HealthOut,
        HoldOut,
        IssuedOut,
        ObservationOut,
        OrientationOut,
        PolicyOut,
        ReconfirmedOut,
        RemoteOrgOut,
        RetentionOut,
        RetentionPolicyOut,
        RevokedOut,
        SweepReportOut,
    )


def __getattr__(name: str) -> Any:
    """A model defined in `_late_responses`, imported on first access (PEP 562)."""
    if name in __all__:
        from studiolo.api import _late_responses

        return getattr(_late_responses, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
