"""The response models no task command reads (admin, content, handoffs, A2A, git), defined
on first access to `studiolo.api.responses` (its `__getattr__`): import them from there."""

from __future__ import annotations

from typing import Any

from studiolo.api.responses import AttemptOut, PrincipalOut, SortedNames, TaskOut, TombstoneOut, _Out
from studiolo.core.enums import FileMode

__all__ = [
    "ArtifactOut",
    "AuditOut",
    "BlobOut",
    "CheckerOut",
    "CollectedOut",
    "CollectionOut",
    "DelegationOut",
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
    "ReconfirmedOut",
    "RemoteOrgOut",
    "RetentionOut",
    "RetentionPolicyOut",
    "RevokedOut",
    "SweepReportOut",
]


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
    mirrors: list[GitMirrorOut] = []  # noqa: RUF012 (a pydantic default, copied per instance)


class GitImportOut(_Out):
    version: int
    written: int
    deleted: int
    unchanged: int
    tree_digest: str


class RetentionPolicyOut(_Out):
    """Seconds each kind is kept (null: for ever)."""

    candidates: float | None
    verifier_logs: float | None
    delegations: float | None
    audit_detail: float | None = None


class HoldOut(_Out):
    id: str
    project_id: str
    task_id: str | None  # null: the whole project
    reason: str
    placed_by: str
    placed_at: float
    released_at: float | None
    released_by: str | None
    release_reason: str | None
    live: bool


class RetentionOut(_Out):
    project_id: str
    policy: RetentionPolicyOut
    holds: list[HoldOut]
    deleted: list[TombstoneOut]  # the latest 100
    swept: dict[str, int]  # kind → subjects retention sweeps took

    @classmethod
    def of(cls, status: Any) -> RetentionOut:
        return cls(
            project_id=status.project_id,
            policy=RetentionPolicyOut.model_validate(status.policy),
            holds=[HoldOut.model_validate(h) for h in status.holds],
            deleted=[TombstoneOut.of(t) for t in status.deleted],
            swept=dict(status.swept),
        )


class SweepReportOut(_Out):
    project_id: str
    swept: dict[str, int]  # kind → subjects taken
    blobs: int  # blobs deleted (bytes nothing else names)
    bytes: int
    more: bool
