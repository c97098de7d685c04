"""The domain's values: frozen dataclasses, and the enums of `enums.py`. No I/O, no clock, no SQL."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from studiolo.core.canonical import digest_json
from studiolo.core.enums import (
    Action,
    AttemptStatus,
    FileMode,
    PrincipalKind,
    ReceiptResult,
    TaskStatus,
    VerdictIsolation,
)
from studiolo.core.paths import matches_any

__all__ = [
    "Action",
    "Artifact",
    "Attempt",
    "AttemptStatus",
    "Candidate",
    "Checker",
    "Completion",
    "Contract",
    "Criterion",
    "Event",
    "FileMode",
    "Grant",
    "Handoff",
    "Observation",
    "Policy",
    "Principal",
    "PrincipalKind",
    "Project",
    "Publication",
    "Receipt",
    "ReceiptResult",
    "Task",
    "TaskStatus",
    "VerdictIsolation",
    "candidate_digest",
]


@dataclass(frozen=True)
class Project:
    id: str
    name: str
    created_at: float


@dataclass(frozen=True)
class Principal:
    id: str
    project_id: str | None  # None: a service administrator of every project
    name: str
    kind: PrincipalKind
    public_key: str | None = None  # Ed25519, base64url raw bytes (verifiers)

    @property
    def is_service_admin(self) -> bool:
        return self.project_id is None and self.kind is PrincipalKind.ADMIN


@dataclass(frozen=True)
class Grant:
    id: str
    project_id: str
    principal_id: str
    actions: frozenset[Action]
    scope: tuple[str, ...]
    created_at: float
    revoked_at: float | None = None

    @property
    def live(self) -> bool:
        return self.revoked_at is None

    def allows(self, action: Action) -> bool:
        return self.live and (action in self.actions or Action.ADMIN in self.actions)

    def covers(self, action: Action, path: str) -> bool:
        return self.allows(action) and matches_any(self.scope, path)


@dataclass(frozen=True)
class Policy:
    project_id: str
    version: int
    text: str
    digest: str
    created_at: float


@dataclass(frozen=True)
class Criterion:
    id: str
    checker: str  # "name@version"
    # Only receipts whose verdict was computed where the candidate's code never ran count
    # as a pass (`VerdictIsolation.SEPARATE`); a failure counts wherever it was computed.
    separate_verdict: bool = False


@dataclass(frozen=True)
class Contract:
    """What done means for one task. Immutable; identified by `hash`."""

    task_id: str
    criteria: tuple[Criterion, ...]
    scope: tuple[str, ...]
    policy_version: int
    requires_deployment: bool = False
    allow_evidence_reuse: bool = False

    @property
    def separate_verdict(self) -> tuple[str, ...]:
        """The criteria whose passing receipts must carry a verdict the candidate cannot touch."""
        return tuple(c.id for c in self.criteria if c.separate_verdict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "task_id": self.task_id,
            "criteria": {c.id: c.checker for c in self.criteria},
            "scope": list(self.scope),
            "policy_version": self.policy_version,
            "requires_deployment": self.requires_deployment,
            "allow_evidence_reuse": self.allow_evidence_reuse,
        }
        if self.separate_verdict:  # absent when empty: every older contract keeps its hash
            out["separate_verdict"] = sorted(self.separate_verdict)
        return out

    @property
    def hash(self) -> str:
        return digest_json(self.to_json())

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Contract:
        separate = set(data.get("separate_verdict", ()))
        criteria = tuple(Criterion(k, v, k in separate) for k, v in sorted(data["criteria"].items()))
        return cls(
            task_id=data["task_id"],
            criteria=criteria,
            scope=tuple(data["scope"]),
            policy_version=int(data["policy_version"]),
            requires_deployment=bool(data.get("requires_deployment", False)),
            allow_evidence_reuse=bool(data.get("allow_evidence_reuse", False)),
        )


@dataclass(frozen=True, kw_only=True)
class Task:
    id: str
    project_id: str
    title: str
    description: str
    contract: Contract
    contract_hash: str
    status: TaskStatus
    current_attempt_id: str | None
    fence: int  # the last fence issued for this task; never reset
    created_at: float
    completed_at: float | None = None

    @property
    def active(self) -> bool:
        return self.status in (TaskStatus.OPEN, TaskStatus.CLAIMED)

    @classmethod
    def open(
        cls, *, id: str, project_id: str, title: str, description: str, contract: Contract, created_at: float
    ) -> Task:
        """A new task: open, unclaimed, no fence issued yet, bound to its contract's hash."""
        return cls(
            id=id,
            project_id=project_id,
            title=title,
            description=description,
            contract=contract,
            contract_hash=contract.hash,
            status=TaskStatus.OPEN,
            current_attempt_id=None,
            fence=0,
            created_at=created_at,
        )


@dataclass(frozen=True)
class Attempt:
    id: str
    task_id: str
    principal_id: str
    fence: int
    lease_deadline: float
    incarnation: str
    status: AttemptStatus
    created_at: float


@dataclass(frozen=True)
class Artifact:
    project_id: str
    path: str
    revision: int
    digest: str | None  # None: a tombstone
    updated_at: float
    mode: FileMode = FileMode.REGULAR

    @property
    def deleted(self) -> bool:
        return self.digest is None


@dataclass(frozen=True)
class Candidate:
    id: str
    task_id: str
    attempt_id: str
    files: Mapping[str, str | None]  # path → blob digest, or None to delete
    bases: Mapping[str, int]  # target path → base revision (0: must not exist)
    file_deps: Mapping[str, int]  # path → revision read
    collection_deps: Mapping[str, int]  # "prefix/" → collection revision read
    digest: str
    dependency_digest: str
    created_at: float
    # written path → its mode where it is not regular (a delete has none): what the
    # completion gives the artifact revision, bound by the digest (`candidate_digest`)
    modes: Mapping[str, FileMode] = field(default_factory=dict)

    @property
    def write_set(self) -> frozenset[str]:
        return frozenset(self.files)

    def mode_of(self, path: str) -> FileMode:
        """The mode the completion gives `path` (regular unless the candidate says otherwise)."""
        return self.modes.get(path, FileMode.REGULAR)


def candidate_digest(files: Mapping[str, str | None], modes: Mapping[str, FileMode]) -> str:
    """The digest a receipt binds: the file map and, when any written path is executable,
    the sorted list of those paths. The same bytes at 100644 and at 100755 are two
    candidates; a candidate with no executable path has the digest it had before modes."""
    body: dict[str, Any] = {"files": dict(files)}
    executable = sorted(p for p, m in modes.items() if m == FileMode.EXECUTABLE and files.get(p))
    if executable:
        body["executable"] = executable
    return digest_json(body)


@dataclass(frozen=True)
class Checker:
    project_id: str
    name: str
    version: str
    kind: str
    config: Mapping[str, Any]
    verifiers: frozenset[str]

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"


@dataclass(frozen=True, kw_only=True)
class Receipt:
    id: str
    project_id: str
    task_id: str
    attempt_id: str
    candidate_id: str
    contract_hash: str
    candidate_digest: str
    dependency_digest: str
    criterion: str
    checker: str
    result: ReceiptResult
    issued_at: int  # the verifier's time, milliseconds since the epoch (signed)
    issuer_id: str
    log_digest: str | None
    signature: str
    reused: bool = False
    # Where the checker computed the verdict (signed). None: a receipt from before receipts
    # said so; it is treated as `shared`.
    verdict_isolation: VerdictIsolation | None = None

    @property
    def separate(self) -> bool:
        """The verdict was computed where the candidate's code never ran (the verifier says)."""
        return self.verdict_isolation is VerdictIsolation.SEPARATE

    def signed_body(self) -> dict[str, Any]:
        """The bindings the verifier signs: its signature covers the RFC 8785 form of this.
        `verdict_isolation` is present only on receipts that carry it, so an older receipt's
        body, id and signature are exactly what they were."""
        body: dict[str, Any] = {
            "task_id": self.task_id,
            "attempt_id": self.attempt_id,
            "contract_hash": self.contract_hash,
            "candidate_digest": self.candidate_digest,
            "dependency_digest": self.dependency_digest,
            "criterion": self.criterion,
            "checker": self.checker,
            "result": self.result.value,
            "issued_at": self.issued_at,
            "issuer": self.issuer_id,
            "log_digest": self.log_digest,
        }
        if self.verdict_isolation is not None:
            body["verdict_isolation"] = self.verdict_isolation.value
        return body

    @classmethod
    def from_signed(
        cls,
        body: Mapping[str, Any],
        signature: str,
        *,
        id: str,
        project_id: str,
        candidate_id: str,
        reused: bool = False,
    ) -> Receipt:
        """The receipt a `signed_body` and its signature describe (the inverse of `signed_body`)."""
        isolation = body.get("verdict_isolation")
        return cls(
            id=id,
            project_id=project_id,
            task_id=body["task_id"],
            attempt_id=body["attempt_id"],
            candidate_id=candidate_id,
            contract_hash=body["contract_hash"],
            candidate_digest=body["candidate_digest"],
            dependency_digest=body["dependency_digest"],
            criterion=body["criterion"],
            checker=body["checker"],
            result=ReceiptResult(body["result"]),
            issued_at=int(body["issued_at"]),
            issuer_id=body["issuer"],
            log_digest=body["log_digest"],
            signature=signature,
            reused=reused,
            verdict_isolation=VerdictIsolation(isolation) if isolation is not None else None,
        )


@dataclass(frozen=True)
class Completion:
    id: str
    task_id: str
    attempt_id: str
    candidate_id: str
    request_id: str
    request_digest: str
    principal_id: str
    commit_version: int
    receipt: Mapping[str, Any]
    signature: str
    created_at: float
    revisions: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Observation:
    id: str
    project_id: str
    target: str
    revision: int | None
    digest: str | None
    kind: str
    observed_at: float
    observer_id: str


@dataclass(frozen=True, kw_only=True)
class Handoff:
    id: str
    task_id: str
    attempt_id: str
    principal_id: str
    contract_hash: str
    artifacts: Mapping[str, int]
    obligations: tuple[str, ...]
    notes: str
    created_at: float


@dataclass(frozen=True)
class Event:
    seq: int
    project_id: str | None
    kind: str
    actor: str | None
    subject: str | None
    data: Mapping[str, Any]
    at: float
    prev_hash: str
    hash: str


@dataclass(frozen=True)
class Publication:
    """One change to a project's artifacts, as the publication log records it: what a
    projection (the git repository) replays. `changes`: path → (digest, mode), the digest
    None for a delete, the mode None where the change keeps the path's mode."""

    project_id: str
    version: int  # the seq of the change's audit event: the ledger's commit version
    kind: str  # "completion", "edit", "import" or "baseline"
    actor: str | None
    at: float
    changes: Mapping[str, tuple[str | None, FileMode | None]]
    meta: Mapping[str, Any]
