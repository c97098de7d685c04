"""Request bodies: what the server validates at its edge and the client sends, one model each
(pydantic 2). The coordinator re-validates meaning.

Built in Python (by the client), a model that does not validate raises the server's own
answer, `InvalidRequest` (422), before anything is sent.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError
from pydantic_core import ErrorDetails

from studiolo._exceptions import InvalidRequest
from studiolo.core import limits
from studiolo.core.enums import Action, FileMode, PrincipalKind

__all__ = [
    "ArtifactEditIn",
    "CancelIn",
    "CandidateIn",
    "CheckerIn",
    "ClaimIn",
    "CollectGarbageIn",
    "CompleteIn",
    "DelegateIn",
    "DeleteBytesIn",
    "GitImportIn",
    "GitMirrorIn",
    "GrantIn",
    "HandoffIn",
    "HoldIn",
    "ImportedFile",
    "IntakeIn",
    "LeaseIn",
    "MigrateIn",
    "ObservationIn",
    "OriginsIn",
    "PolicyIn",
    "PrincipalIn",
    "ProjectIn",
    "PublicKeyIn",
    "ReassignIn",
    "ReceiptIn",
    "ReleaseHoldIn",
    "RemoteOrgIn",
    "RetentionIn",
    "ReuseIn",
    "ReviewIn",
    "SweepIn",
    "TaskIn",
    "build_all",
    "invalid_request",
]

# Bounded so that every value fits a 64-bit SQL integer and a JSON double.
# Strict: `true`, `"600"` or `5.0` are not numbers here (the service bounds them again).
Rev = Annotated[int, Field(strict=True, ge=0, le=2**53)]
Lease = Annotated[float, Field(strict=True, ge=1, le=10**9)]
Short = Annotated[str, Field(max_length=limits.SHORT)]
Text = Annotated[str, Field(max_length=limits.TEXT)]
# The narrower bounds (`core.limits`): the door checks the same numbers.
CriterionId = Annotated[str, Field(min_length=1, max_length=limits.CRITERION_ID)]
Criteria = dict[CriterionId, Short]
Notes = Annotated[str, Field(max_length=limits.HANDOFF_NOTES)]


def invalid_request(errors: Iterable[ErrorDetails]) -> InvalidRequest:
    """A validation failure as the server reports it (422): the first five problems, by field."""
    parts = [f"{'.'.join(str(p) for p in e['loc'] if p != 'body') or 'body'}: {e['msg']}" for e in errors]
    exc = InvalidRequest("; ".join(parts[:5]) or "invalid request")
    exc.status = 422
    return exc


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise invalid_request(exc.errors()) from None


def build_all() -> None:
    """Build every request model now, and for good: a client builds only the one it sends
    (`defer_build`); a server validates them all: built at start, not at a first request."""
    for model in _In.__subclasses__():
        model.model_config["defer_build"] = False
        model.model_rebuild(force=True)


class ProjectIn(_In):
    name: Short


class PrincipalIn(_In):
    name: Short
    kind: PrincipalKind
    public_key: Short | None = Field(None, description="Ed25519 public key, base64url (verifiers)")


class PublicKeyIn(_In):
    public_key: Short


class GrantIn(_In):
    principal_id: Short
    actions: list[Action] = Field(min_length=1, max_length=len(Action))
    scope: list[Short] = Field(default_factory=lambda: ["**"], min_length=1, max_length=200)


class PolicyIn(_In):
    text: Text


class CheckerIn(_In):
    name: Short
    version: Short
    kind: Short = "command"
    config: dict[str, Any] = Field(default_factory=dict)
    verifiers: list[Short] = Field(default_factory=list, max_length=100)


class TaskIn(_In):
    title: Annotated[str, Field(max_length=limits.TITLE)]
    description: Annotated[str, Field(max_length=limits.DESCRIPTION)] = ""
    criteria: Criteria = Field(description="criterion id → admitted checker `name@version`")
    scope: list[Short] = Field(min_length=1, max_length=200)
    policy_version: Rev | None = Field(None, description="default: the latest published policy")
    requires_deployment: StrictBool = False
    allow_evidence_reuse: StrictBool = False
    separate_verdict: list[Short] = Field(
        default_factory=list,
        max_length=100,
        description="criteria whose passing receipts must be computed where the candidate's code never ran",
    )


class IntakeIn(_In):
    """An A2A intake template (`PUT /a2a/admin/projects/{id}/intakes/{name}`): the contract of
    every task delegated through it."""

    description: Annotated[str, Field(max_length=2000)] = ""
    criteria: Criteria = Field(description="criterion id → admitted checker `name@version`")
    scope: list[Short] = Field(max_length=200)
    policy_version: Rev | None = Field(None, description="default: the latest when each task is created")


class CollectGarbageIn(_In):
    older_than_seconds: float = Field(
        3600.0, strict=True, ge=0, le=10**9, description="spare blobs staged more recently than this"
    )


Seconds = Annotated[float, Field(strict=True, ge=0, le=100 * 365 * 86400)]
Why = Annotated[str, Field(min_length=1, max_length=2000)]


class RetentionIn(_In):
    """The periods to change (seconds; null: keep for ever); a kind left out keeps its period."""

    candidates: Seconds | None = Field(
        None, description="bytes of candidates that never became authoritative"
    )
    verifier_logs: Seconds | None = Field(None, description="the logs receipts name")
    delegations: Seconds | None = Field(None, description="the evidence blobs of ended remote delegations")
    audit_detail: Seconds | None = Field(
        None, description="the detail (data) of audit events; the chain keeps its digest"
    )

    def periods(self) -> dict[str, float | None]:
        return {k: getattr(self, k) for k in sorted(self.model_fields_set)}


class HoldIn(_In):
    task_id: Short | None = Field(None, description="the task held; null: the whole project")
    reason: Why


class ReleaseHoldIn(_In):
    reason: Why


class DeleteBytesIn(_In):
    digest: Short
    reason: Why


class SweepIn(_In):
    project_id: Short | None = Field(None, description="one project (a project admin); null: every project")


class CancelIn(_In):
    reason: Short = ""


class MigrateIn(_In):
    criteria: Criteria | None = None
    scope: list[Short] | None = Field(None, max_length=200)
    policy_version: Rev | None = None
    separate_verdict: list[Short] | None = Field(None, max_length=100)


class ClaimIn(_In):
    lease_seconds: Lease | None = None


class LeaseIn(_In):
    lease_seconds: Lease | None = None


class ReassignIn(_In):
    principal_id: Short
    lease_seconds: Lease | None = None


class ArtifactEditIn(_In):
    digest: Short | None = Field(description="blob digest of the new content; null deletes (a tombstone)")
    base_revision: Rev = Field(description="the revision this edit replaces (0: the path must not exist)")
    mode: FileMode | None = Field(
        default=None, description="regular or executable; null keeps the path's (regular when new)"
    )


class CandidateIn(_In):
    files: dict[str, Short | None] = Field(description="path → blob digest, or null to delete")
    bases: dict[str, Rev] = Field(description="target path → base revision (0: must not exist)")
    file_deps: dict[str, Rev] = Field(default_factory=dict, description="path → revision read")
    collection_deps: dict[str, Rev] = Field(
        default_factory=dict, description="`prefix/` → collection revision read"
    )
    modes: dict[str, FileMode] = Field(
        default_factory=dict,
        exclude_if=lambda v: not v,  # an all-regular candidate reads as it did before modes
        description="written path → regular or executable (git's 100644 / 100755); absent: regular."
        " The candidate digest binds it, and the completion gives it to the artifact revision.",
    )


class ReceiptIn(_In):
    body: dict[str, Any] = Field(description="the signed bindings (see docs/api.md)")
    signature: Short = Field(description="Ed25519 over the RFC 8785 form of `body`, base64url")


class ReuseIn(_In):
    receipt_id: Short


class CompleteIn(_In):
    request_id: Annotated[str, Field(min_length=1, max_length=limits.REQUEST_ID)]
    attempt_id: Short
    fence: Rev
    contract_hash: Annotated[str, Field(max_length=limits.CONTRACT_HASH)]
    candidate_id: Short
    evidence: list[Short] = Field(default_factory=list, max_length=limits.EVIDENCE)


class HandoffIn(_In):
    artifacts: dict[str, Rev] = Field(default_factory=dict)
    obligations: list[Notes] = Field(default_factory=list, max_length=limits.OBLIGATIONS)
    notes: Notes = ""


class ObservationIn(_In):
    target: Short
    kind: Short
    revision: Rev | None = None
    digest: Short | None = None


class RemoteOrgIn(_In):
    """Pin a remote organisation's keys (kid → Ed25519 public key, base64url)."""

    name: Short
    keys: Annotated[dict[Short, Short], Field(min_length=1, max_length=16)]
    target: Short | None = None
    origins: Annotated[list[Short], Field(max_length=16)] = []  # scheme://host[:port]


class OriginsIn(_In):
    """The origins (`scheme://host[:port]`) the service may send requests to for a remote
    organisation; a loopback, link-local or private address only when named as such."""

    origins: Annotated[list[Short], Field(max_length=16)]


class DelegateIn(_In):
    """Delegate a task to the remote agent at `agent_url` (its card must be signed by a pinned key)."""

    org: Short
    agent_url: Annotated[str, Field(max_length=2000, pattern=r"^https?://")]
    skill: Short | None = None


class ReviewIn(_In):
    decision: Literal["finalize", "reject"]
    note: Annotated[str, Field(max_length=2000)] = ""


class ImportedFile(_In):
    digest: Short = Field(description="blob digest of the file's bytes (uploaded first)")
    mode: FileMode = FileMode.REGULAR


class GitImportIn(_In):
    files: dict[str, ImportedFile] = Field(description="the whole tree: normalized path → file")
    source: dict[str, Short] = Field(
        default_factory=dict, description="where it came from: `commit`, `ref`, `repository`"
    )


class GitMirrorIn(_In):
    url: str = Field(max_length=1000, description="a remote to push every publication to")
