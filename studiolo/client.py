"""The Python client of Studiolo's HTTP API.

    with Client("http://127.0.0.1:8765", token) as c:
        task = c.claim(task_id)

Every method sends one operation of the table (`studiolo/api/operations.py`: its verb and
URL come from the row): it sends the operation's request model and returns its response
model, the same models the server validates with (`studiolo.api`); a request that does not
validate raises `InvalidRequest` before anything is sent. Errors come back as the same `StudioloError`
subclasses the server raised, rebuilt from problem+json. Pass `transport=` (an
`httpx.BaseTransport`, e.g. `httpx.MockTransport`) to talk to an app in-process.

The server is input, not authority over the client's disk: `get_blob` checks the bytes
against their digest, and `studiolo.confined` writes a server-named path only strictly
inside a local directory (no `..`, absolute paths, backslashes, `.git` segments, or symlinks).
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, TypeAdapter

from studiolo._exceptions import (
    BytesDeleted,
    CompletionRejected,
    Conflict,
    InvalidPath,
    InvalidRequest,
    NotAuthorized,
    NotFound,
    PayloadTooLarge,
    StudioloError,
    Unauthenticated,
)
from studiolo.api import responses as s
from studiolo.api.operations import OPERATIONS
from studiolo.confined import UntrustedResponse
from studiolo.core.canonical import digest_bytes
from studiolo.core.enums import Action, FileMode, PrincipalKind
from studiolo.core.paths import is_git_segment
from studiolo.core.reasons import Reason

if TYPE_CHECKING:  # imported where used, so that a CLI call pays only for what it uses:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # signing

    from studiolo.api import requests as q  # the request models: a read sends none
    from studiolo.api.verification import CandidateTree, VerificationItem  # the verifier's side

__all__ = [
    "Client",
    "Completed",
    "UntrustedResponse",
    "error_from_problem",
    "is_git_segment",
]

M = TypeVar("M", bound=BaseModel)
_PREDICATES = frozenset(r.value for r in Reason)
# Keep an idle connection this long (httpx: 5 s), below the server's keep-alive (30 s by
# default): an agent heartbeating every 10 s reuses its connection.
_KEEP_ALIVE_SECONDS = 25.0
_BY_STATUS: dict[int, type[StudioloError]] = {
    400: InvalidRequest,
    401: Unauthenticated,
    403: NotAuthorized,
    404: NotFound,
    409: Conflict,
    410: BytesDeleted,
    413: PayloadTooLarge,
    422: InvalidRequest,
}


def _verify(base_url: str) -> ssl.SSLContext | bool:
    """Plain HTTP needs no CA bundle (loading one costs a CLI call ~50 ms): a context that
    trusts no certificate, so TLS to anyone fails closed. HTTPS verifies as httpx does."""
    if httpx.URL(base_url).scheme == "https":
        return True
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


@dataclass(frozen=True)
class Completed:
    """An accepted completion; `replay` is True when the server had seen the request id."""

    completion: s.CompletionOut
    replay: bool


def error_from_problem(status: int, problem: Mapping[str, Any], *, completion: bool = False) -> StudioloError:
    """Rebuild the server's exception from an RFC 9457 body."""
    reason = str(problem.get("reason") or "internal_error")
    detail = str(problem.get("detail") or reason)
    failed = [str(f) for f in problem.get("failed") or [reason]]
    details = _details(problem.get("details"))
    if completion and status in (404, 409) and set(failed) <= _PREDICATES:
        return CompletionRejected(failed, detail, details)
    cls = InvalidPath if reason == "invalid_path" else _BY_STATUS.get(status, StudioloError)
    exc = cls(detail, reason=reason, failed=failed, details=details)
    exc.status = status
    return exc


def _details(value: object) -> list[dict[str, Any]]:
    """A problem's `details`: what each failed predicate found (only JSON objects are kept)."""
    if not isinstance(value, list):
        return []
    return [dict(d) for d in value if isinstance(d, dict)]


class Client:
    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        project: str | None = None,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(
            base_url=base_url,
            headers=headers,
            transport=transport,
            timeout=timeout,
            verify=_verify(base_url),
            limits=httpx.Limits(keepalive_expiry=_KEEP_ALIVE_SECONDS),
        )
        self._project = project

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # plumbing ----------------------------------------------------------------
    def _send(self, method: str, url: str, *, completion: bool = False, **kw: Any) -> httpx.Response:
        response = self._http.request(method, url, **kw)
        if response.status_code >= 400:
            raise _error(response, completion=completion)
        return response

    def _one(self, model: type[M], at: tuple[str, str], body: BaseModel | None = None, **kw: Any) -> M:
        if body is not None:
            kw.update(_json(body))
        return model.model_validate_json(self._send(*at, **kw).content)

    def _many(self, model: type[M], at: tuple[str, str], **kw: Any) -> list[M]:
        return TypeAdapter(list[model]).validate_json(self._send(*at, **kw).content)  # type: ignore[valid-type]

    def _at(self, operation: str, project: str | None = None, /, **params: str) -> tuple[str, str]:
        """The method and URL of an operation (`api/operations.py`), its path filled in: each
        value one opaque segment, a logical path escaped whole, the project the default."""
        op = OPERATIONS[operation]
        values = {k: _path(v) if k == "path" else _seg(v) for k, v in params.items()}
        if "project_id" in op.params and "project_id" not in values:
            values["project_id"] = _seg(self.project_id(project))
        return op.method, op.template.format(**values)

    def project_id(self, project: str | None = None) -> str:
        """The named project, else the client's, else the token's own project."""
        if project or self._project:
            return str(project or self._project)
        self._project = self.me().project_id
        if self._project is None:
            raise InvalidRequest("a service admin token needs a project: pass project=")
        return self._project

    # operations --------------------------------------------------------------
    def healthz(self) -> s.HealthOut:
        return self._one(s.HealthOut, self._at("healthz"))

    def metrics(self) -> str:
        return self._send(*self._at("metrics")).text

    def jwks(self) -> dict[str, Any]:
        data: dict[str, Any] = self._send(*self._at("jwks")).json()
        return data

    # admin -------------------------------------------------------------------
    def me(self) -> s.PrincipalOut:
        return self._one(s.PrincipalOut, self._at("me"))

    def projects(self) -> list[s.ProjectOut]:
        return self._many(s.ProjectOut, self._at("projects"))

    def create_project(self, name: str) -> s.ProjectOut:
        from studiolo.api import requests as q

        return self._one(s.ProjectOut, self._at("create_project"), q.ProjectIn(name=name))

    def orientation(self, project: str | None = None) -> s.OrientationOut:
        return self._one(s.OrientationOut, self._at("orientation", project))

    def add_principal(
        self, name: str, kind: PrincipalKind, public_key: str | None = None, *, project: str | None = None
    ) -> s.IssuedOut:
        from studiolo.api import requests as q

        body = q.PrincipalIn(name=name, kind=kind, public_key=public_key)
        return self._one(s.IssuedOut, self._at("add_principal", project), body)

    def principals(self, project: str | None = None) -> list[s.PrincipalOut]:
        return self._many(s.PrincipalOut, self._at("principals", project))

    def rotate_token(self, principal_id: str) -> s.IssuedOut:
        return self._one(s.IssuedOut, self._at("rotate_token", principal_id=principal_id))

    def revoke_tokens(self, principal_id: str) -> int:
        out = self._one(s.RevokedOut, self._at("revoke_tokens", principal_id=principal_id))
        return out.revoked

    def reconfirm(self, principal_id: str) -> s.ReconfirmedOut:
        return self._one(s.ReconfirmedOut, self._at("reconfirm", principal_id=principal_id))

    def set_public_key(self, principal_id: str, public_key: str) -> s.PrincipalOut:
        from studiolo.api import requests as q

        at = self._at("set_public_key", principal_id=principal_id)
        return self._one(s.PrincipalOut, at, q.PublicKeyIn(public_key=public_key))

    def grant(
        self,
        principal_id: str,
        actions: Iterable[Action],
        scope: Iterable[str] = ("**",),
        *,
        project: str | None = None,
    ) -> s.GrantOut:
        from studiolo.api import requests as q

        body = q.GrantIn(principal_id=principal_id, actions=list(actions), scope=list(scope))
        return self._one(s.GrantOut, self._at("grant", project), body)

    def grants(self, project: str | None = None) -> list[s.GrantOut]:
        return self._many(s.GrantOut, self._at("grants", project))

    def revoke_grant(self, grant_id: str) -> s.GrantOut:
        return self._one(s.GrantOut, self._at("revoke_grant", grant_id=grant_id))

    def publish_policy(self, text: str, *, project: str | None = None) -> s.PolicyOut:
        from studiolo.api import requests as q

        return self._one(s.PolicyOut, self._at("publish_policy", project), q.PolicyIn(text=text))

    def policies(self, project: str | None = None) -> list[s.PolicyOut]:
        return self._many(s.PolicyOut, self._at("policies", project))

    def register_checker(
        self,
        name: str,
        version: str,
        kind: str = "command",
        config: Mapping[str, Any] | None = None,
        verifiers: Iterable[str] = (),
        *,
        project: str | None = None,
    ) -> s.CheckerOut:
        from studiolo.api import requests as q

        body = q.CheckerIn(
            name=name, version=version, kind=kind, config=dict(config or {}), verifiers=list(verifiers)
        )
        return self._one(s.CheckerOut, self._at("register_checker", project), body)

    def checkers(self, project: str | None = None) -> list[s.CheckerOut]:
        return self._many(s.CheckerOut, self._at("checkers", project))

    def define_intake(
        self,
        name: str,
        criteria: Mapping[str, str],
        scope: Sequence[str],
        *,
        description: str = "",
        policy_version: int | None = None,
        project: str | None = None,
    ) -> dict[str, Any]:
        """Define (or replace) an A2A intake template: the contract of delegated tasks."""
        from studiolo.api import requests as q

        body = q.IntakeIn(
            description=description, criteria=dict(criteria), scope=list(scope), policy_version=policy_version
        )
        url = f"{self._intakes(project)}/{_seg(name)}"
        data: dict[str, Any] = self._send("PUT", url, **_json(body)).json()
        return data

    def intakes(self, project: str | None = None) -> list[dict[str, Any]]:
        data: list[dict[str, Any]] = self._send("GET", self._intakes(project)).json()
        return data

    def _intakes(self, project: str | None) -> str:
        return f"/a2a/admin/projects/{quote(self.project_id(project), safe='')}/intakes"

    # tasks and attempts --------------------------------------------------------
    def create_task(
        self,
        title: str,
        *,
        criteria: Mapping[str, str],
        scope: Iterable[str],
        description: str = "",
        policy_version: int | None = None,
        requires_deployment: bool = False,
        allow_evidence_reuse: bool = False,
        separate_verdict: Iterable[str] = (),
        project: str | None = None,
    ) -> s.TaskOut:
        from studiolo.api import requests as q

        body = q.TaskIn(
            title=title,
            description=description,
            criteria=dict(criteria),
            scope=list(scope),
            policy_version=policy_version,
            requires_deployment=requires_deployment,
            allow_evidence_reuse=allow_evidence_reuse,
            separate_verdict=list(separate_verdict),
        )
        return self._one(s.TaskOut, self._at("create_task", project), body)

    def tasks(
        self, status: str | None = None, limit: int = 200, offset: int = 0, *, project: str | None = None
    ) -> list[s.TaskSummaryOut]:
        params: dict[str, Any] = {"limit": limit, "offset": offset}
        if status:
            params["status"] = status
        return self._many(s.TaskSummaryOut, self._at("tasks", project), params=params)

    def task(self, task_id: str) -> s.TaskViewOut:
        return self._one(s.TaskViewOut, self._at("task", task_id=task_id))

    def cancel(self, task_id: str, reason: str = "") -> s.TaskOut:
        from studiolo.api import requests as q

        return self._one(s.TaskOut, self._at("cancel", task_id=task_id), q.CancelIn(reason=reason))

    def migrate(
        self,
        task_id: str,
        *,
        criteria: Mapping[str, str] | None = None,
        scope: Iterable[str] | None = None,
        policy_version: int | None = None,
        separate_verdict: Iterable[str] | None = None,
    ) -> s.TaskOut:
        from studiolo.api import requests as q

        body = q.MigrateIn(
            criteria=dict(criteria) if criteria is not None else None,
            scope=list(scope) if scope is not None else None,
            policy_version=policy_version,
            separate_verdict=list(separate_verdict) if separate_verdict is not None else None,
        )
        return self._one(s.TaskOut, self._at("migrate", task_id=task_id), body)

    def claim(self, task_id: str, lease_seconds: float | None = None) -> s.AttemptOut:
        from studiolo.api import requests as q

        at = self._at("claim", task_id=task_id)
        return self._one(s.AttemptOut, at, q.ClaimIn(lease_seconds=lease_seconds))

    def reassign(self, task_id: str, principal_id: str, lease_seconds: float | None = None) -> s.AttemptOut:
        from studiolo.api import requests as q

        body = q.ReassignIn(principal_id=principal_id, lease_seconds=lease_seconds)
        return self._one(s.AttemptOut, self._at("reassign", task_id=task_id), body)

    def attempt(self, attempt_id: str) -> s.AttemptOut:
        return self._one(s.AttemptOut, self._at("attempt", attempt_id=attempt_id))

    def heartbeat(self, attempt_id: str, lease_seconds: float | None = None) -> s.AttemptOut:
        from studiolo.api import requests as q

        at = self._at("heartbeat", attempt_id=attempt_id)
        return self._one(s.AttemptOut, at, q.LeaseIn(lease_seconds=lease_seconds))

    def release(self, attempt_id: str) -> s.AttemptOut:
        return self._one(s.AttemptOut, self._at("release", attempt_id=attempt_id))

    def handoff(
        self,
        attempt_id: str,
        *,
        artifacts: Mapping[str, int] | None = None,
        obligations: Iterable[str] = (),
        notes: str = "",
    ) -> s.HandoffOut:
        from studiolo.api import requests as q

        body = q.HandoffIn(artifacts=dict(artifacts or {}), obligations=list(obligations), notes=notes)
        return self._one(s.HandoffOut, self._at("handoff", attempt_id=attempt_id), body)

    def handoff_view(self, task_id: str) -> s.HandoffViewOut:
        return self._one(s.HandoffViewOut, self._at("handoff_view", task_id=task_id))

    # content -------------------------------------------------------------------
    def git_status(self, *, project: str | None = None) -> s.GitStatusOut:
        """Which ledger version the project's git branch reflects, and whether it lags."""
        return self._one(s.GitStatusOut, self._at("git_status", project))

    def git_mirror(self, url: str, *, project: str | None = None) -> s.GitMirrorOut:
        """Push every publication of the project to `url` too."""
        from studiolo.api import requests as q

        return self._one(s.GitMirrorOut, self._at("git_mirror", project), q.GitMirrorIn(url=url))

    def git_import(
        self,
        files: dict[str, tuple[str, FileMode]],
        source: dict[str, str],
        *,
        project: str | None = None,
    ) -> s.GitImportOut:
        """Make a tree (path → (digest, mode), blobs uploaded first) the project's artifacts."""
        from studiolo.api import requests as q

        tree = {p: q.ImportedFile(digest=d, mode=m) for p, (d, m) in files.items()}
        body = q.GitImportIn(files=tree, source=source)
        return self._one(s.GitImportOut, self._at("git_import", project), body)

    def put_blob(self, data: bytes) -> s.BlobOut:
        headers = {"Content-Type": "application/octet-stream"}
        return self._one(s.BlobOut, self._at("put_blob"), content=data, headers=headers)

    def get_blob(self, digest: str) -> bytes:
        """The blob's bytes, checked against `digest` (UntrustedResponse if they differ)."""
        data = self._send(*self._at("get_blob", digest=digest)).content
        if digest_bytes(data) != digest:
            raise UntrustedResponse(f"the server sent bytes that do not match {digest[:80]!r}")
        return data

    def collect_garbage(self, older_than_seconds: float = 3600.0) -> int:
        """Delete the blobs nothing references, staged over this long ago (service admins); how many."""
        from studiolo.api import requests as q

        body = q.CollectGarbageIn(older_than_seconds=older_than_seconds)
        return self._one(s.CollectedOut, self._at("collect_garbage"), body).collected

    # retention (docs/operations.md, "Retention and deletion") -------------------------
    def retention(self, *, project: str | None = None) -> s.RetentionOut:
        return self._one(s.RetentionOut, self._at("retention", project))

    def set_retention(
        self, periods: dict[str, float | None], *, project: str | None = None
    ) -> s.RetentionPolicyOut:
        """Change the named periods (seconds; None: for ever); the others stay."""
        from studiolo.api import requests as q

        body = q.RetentionIn(**periods).model_dump_json(exclude_unset=True)  # a kind left out stays
        headers = {"Content-Type": "application/json"}
        return self._one(
            s.RetentionPolicyOut, self._at("set_retention", project), content=body, headers=headers
        )

    def place_hold(self, reason: str, task_id: str | None = None, *, project: str | None = None) -> s.HoldOut:
        from studiolo.api import requests as q

        return self._one(s.HoldOut, self._at("place_hold", project), q.HoldIn(task_id=task_id, reason=reason))

    def release_hold(self, hold_id: str, reason: str) -> s.HoldOut:
        from studiolo.api import requests as q

        return self._one(s.HoldOut, self._at("release_hold", hold_id=hold_id), q.ReleaseHoldIn(reason=reason))

    def delete_bytes(self, digest: str, reason: str, *, project: str | None = None) -> s.TombstoneOut:
        from studiolo.api import requests as q

        body = q.DeleteBytesIn(digest=digest, reason=reason)
        return self._one(s.TombstoneOut, self._at("delete_bytes", project), body)

    def sweep_retention(self, project_id: str | None = None) -> list[s.SweepReportOut]:
        """Sweep one project (its admins) or, with None, every project (service admins)."""
        from studiolo.api import requests as q

        return self._many(
            s.SweepReportOut, self._at("sweep_retention"), **_json(q.SweepIn(project_id=project_id))
        )

    def artifacts(self, prefix: str = "", *, project: str | None = None) -> list[s.ArtifactOut]:
        return self._many(s.ArtifactOut, self._at("artifacts", project), params={"prefix": prefix})

    def artifact(
        self, path: str, revision: int | None = None, *, project: str | None = None
    ) -> s.ArtifactOut:
        params = {"revision": revision} if revision is not None else {}
        at = self._at("artifact", project, path=path)
        return self._one(s.ArtifactOut, at, params=params)

    def revision(self, path: str, *, project: str | None = None) -> int:
        """The current revision of a path; 0 if it never existed."""
        try:
            return self.artifact(path, project=project).revision
        except NotFound as exc:
            if exc.reason != "not_found":
                raise
            return 0

    def edit_artifact(
        self,
        path: str,
        digest: str | None,
        base_revision: int,
        *,
        project: str | None = None,
        mode: FileMode | None = None,
    ) -> s.ArtifactOut:
        from studiolo.api import requests as q

        at = self._at("edit_artifact", project, path=path)
        edit = q.ArtifactEditIn(digest=digest, base_revision=base_revision, mode=mode)
        return self._one(s.ArtifactOut, at, edit)

    def collection(self, prefix: str, *, project: str | None = None) -> s.CollectionOut:
        return self._one(s.CollectionOut, self._at("collection", project), params={"prefix": prefix})

    def submit_candidate(
        self,
        attempt_id: str,
        files: Mapping[str, str | None],
        bases: Mapping[str, int],
        file_deps: Mapping[str, int] | None = None,
        collection_deps: Mapping[str, int] | None = None,
        modes: Mapping[str, FileMode] | None = None,
    ) -> s.CandidateOut:
        """`modes`: written path → mode (absent: regular); the digest binds it."""
        from studiolo.api import requests as q

        body = q.CandidateIn(
            files=dict(files),
            bases=dict(bases),
            file_deps=dict(file_deps or {}),
            collection_deps=dict(collection_deps or {}),
            modes=dict(modes or {}),
        )
        return self.send_candidate(attempt_id, body)

    def send_candidate(self, attempt_id: str, body: q.CandidateIn) -> s.CandidateOut:
        """`submit_candidate`, with the request already built (the MCP tools build it)."""
        return self._one(s.CandidateOut, self._at("send_candidate", attempt_id=attempt_id), body)

    def candidate(self, candidate_id: str) -> s.CandidateOut:
        return self._one(s.CandidateOut, self._at("candidate", candidate_id=candidate_id))

    def observe(
        self,
        target: str,
        kind: str,
        revision: int | None = None,
        digest: str | None = None,
        *,
        project: str | None = None,
    ) -> s.ObservationOut:
        from studiolo.api import requests as q

        body = q.ObservationIn(target=target, kind=kind, revision=revision, digest=digest)
        return self._one(s.ObservationOut, self._at("observe", project), body)

    def observations(self, target: str = "", *, project: str | None = None) -> list[s.ObservationOut]:
        return self._many(s.ObservationOut, self._at("observations", project), params={"target": target})

    # evidence ------------------------------------------------------------------
    def post_receipt(self, candidate_id: str, body: Mapping[str, Any], signature: str) -> s.ReceiptOut:
        from studiolo.api import requests as q

        at = self._at("post_receipt", candidate_id=candidate_id)
        return self._one(s.ReceiptOut, at, q.ReceiptIn(body=dict(body), signature=signature))

    def sign_receipt(
        self,
        candidate_id: str,
        criterion: str,
        result: str,
        key: Ed25519PrivateKey,
        *,
        issued_at_ms: int,
        log_digest: str | None = None,
    ) -> s.ReceiptOut:
        """Bind a verifier's result to a candidate's exact bytes, sign it, and post it.

        This records the result it is given; it does not run the checker.
        """
        cand = self.candidate(candidate_id)
        view = self.task(cand.task_id)
        body = {
            "task_id": cand.task_id,
            "attempt_id": cand.attempt_id,
            "contract_hash": view.task.contract_hash,
            "candidate_digest": cand.digest,
            "dependency_digest": cand.dependency_digest,
            "criterion": criterion,
            "checker": view.task.contract.criteria.get(criterion, ""),
            "result": result,
            "issued_at": issued_at_ms,
            "issuer": self.me().id,
            "log_digest": log_digest,
        }
        from studiolo.keys import sign

        return self.post_receipt(candidate_id, body, sign(key, body))

    def reuse_receipt(self, candidate_id: str, receipt_id: str) -> s.ReceiptOut:
        from studiolo.api import requests as q

        at = self._at("reuse_receipt", candidate_id=candidate_id)
        return self._one(s.ReceiptOut, at, q.ReuseIn(receipt_id=receipt_id))

    def candidate_tree(self, candidate_id: str) -> CandidateTree:
        from studiolo.api.verification import CandidateTree

        return self._one(CandidateTree, self._at("candidate_tree", candidate_id=candidate_id))

    # delegation to remote A2A agents ---------------------------------------------
    def add_remote_org(
        self,
        name: str,
        keys: Mapping[str, str],
        *,
        target: str | None = None,
        origins: Sequence[str] = (),
        project: str | None = None,
    ) -> s.RemoteOrgOut:
        from studiolo.api import requests as q

        body = q.RemoteOrgIn(name=name, keys=dict(keys), target=target, origins=list(origins))
        return self._one(s.RemoteOrgOut, self._at("add_remote_org", project), body)

    def set_remote_origins(
        self, name: str, origins: Sequence[str], *, project: str | None = None
    ) -> s.RemoteOrgOut:
        from studiolo.api import requests as q

        at = self._at("set_remote_origins", project, name=name)
        return self._one(s.RemoteOrgOut, at, q.OriginsIn(origins=list(origins)))

    def remote_orgs(self, project: str | None = None) -> list[s.RemoteOrgOut]:
        return self._many(s.RemoteOrgOut, self._at("remote_orgs", project))

    def revoke_remote_org(self, name: str, *, project: str | None = None) -> s.RemoteOrgOut:
        return self._one(s.RemoteOrgOut, self._at("revoke_remote_org", project, name=name))

    def delegate(self, task_id: str, org: str, agent_url: str, skill: str | None = None) -> s.DelegationOut:
        from studiolo.api import requests as q

        body = q.DelegateIn(org=org, agent_url=agent_url, skill=skill)
        return self._one(s.DelegationOut, self._at("delegate", task_id=task_id), body)

    def delegation(self, delegation_id: str) -> s.DelegationOut:
        return self._one(s.DelegationOut, self._at("delegation", delegation_id=delegation_id))

    def delegations(self, state: str | None = None, *, project: str | None = None) -> list[s.DelegationOut]:
        params = {"state": state} if state else {}
        return self._many(s.DelegationOut, self._at("delegations", project), params=params)

    def review_queue(self, project: str | None = None) -> list[s.DelegationOut]:
        return self._many(s.DelegationOut, self._at("review_queue", project))

    def review(
        self, delegation_id: str, decision: Literal["finalize", "reject"], note: str = ""
    ) -> s.DelegationOut:
        from studiolo.api import requests as q

        body = q.ReviewIn(decision=decision, note=note)
        return self._one(s.DelegationOut, self._at("review", delegation_id=delegation_id), body)

    def receipts(self, candidate_id: str) -> list[s.ReceiptOut]:
        return self._many(s.ReceiptOut, self._at("receipts", candidate_id=candidate_id))

    def receipt(self, receipt_id: str) -> s.ReceiptOut:
        return self._one(s.ReceiptOut, self._at("receipt", receipt_id=receipt_id))

    def verifications(self, *, project: str | None = None, limit: int = 50) -> list[VerificationItem]:
        from studiolo.api.verification import VerificationItem

        params: dict[str, Any] = {"limit": limit}
        if project or self._project:
            params["project_id"] = project or self._project
        return self._many(VerificationItem, self._at("verifications"), params=params)

    # completion ------------------------------------------------------------------
    def complete(
        self,
        task_id: str,
        *,
        request_id: str,
        attempt_id: str,
        fence: int,
        contract_hash: str,
        candidate_id: str,
        evidence: Iterable[str],
    ) -> Completed:
        from studiolo.api import requests as q

        body = q.CompleteIn(
            request_id=request_id,
            attempt_id=attempt_id,
            fence=fence,
            contract_hash=contract_hash,
            candidate_id=candidate_id,
            evidence=list(evidence),
        )
        return self.send_completion(task_id, body)

    def send_completion(self, task_id: str, body: q.CompleteIn) -> Completed:
        """`complete`, with the request already built (the MCP tools build it)."""
        at = self._at("send_completion", task_id=task_id)
        response = self._send(*at, completion=True, **_json(body))
        completion = s.CompletionOut.model_validate_json(response.content)
        return Completed(completion, response.headers.get("Idempotent-Replay") == "true")

    # events ----------------------------------------------------------------------
    def events(self, after: int = 0, limit: int = 200, *, project: str | None = None) -> list[s.EventOut]:
        params = {"after": after, "limit": limit}
        return self._many(s.EventOut, self._at("events", project), params=params)

    def stream_events(
        self, after: int = 0, *, timeout: float = 3600.0, project: str | None = None
    ) -> Iterator[s.EventOut]:
        """Follow the project's events (Server-Sent Events) until `timeout` or the caller stops."""
        at = self._at("stream_events", project)
        params = {"after": after, "timeout": timeout}
        http_timeout = httpx.Timeout(self._http.timeout.connect, read=None)
        with self._http.stream(*at, params=params, timeout=http_timeout) as response:
            if response.status_code >= 400:
                response.read()
                raise _error(response)
            for kind, data in _sse_messages(response.iter_lines()):
                if kind == "error":
                    problem = json.loads(data)
                    raise error_from_problem(int(problem.get("status", 500)), problem)
                yield s.EventOut.model_validate_json(data)


def _json(body: BaseModel) -> dict[str, Any]:
    """The keyword arguments that send a request model as the JSON body."""
    return {"content": body.model_dump_json(), "headers": {"Content-Type": "application/json"}}


def _seg(value: str) -> str:
    return quote(value, safe="")


def _path(value: str) -> str:
    """A logical path as one opaque URL tail: `/` and `.` escaped, so that no HTTP layer
    resolves `..` or merges slashes before the server's own normalizer sees it."""
    return quote(value, safe="").replace(".", "%2E")


def _error(response: httpx.Response, *, completion: bool = False) -> StudioloError:
    try:
        problem = response.json()
    except ValueError:
        problem = {"reason": "internal_error", "detail": response.text[:500]}
    if not isinstance(problem, dict):
        problem = {"reason": "internal_error", "detail": str(problem)[:500]}
    return error_from_problem(response.status_code, problem, completion=completion)


def _sse_messages(lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    kind, data = "message", list[str]()
    for line in lines:
        if not line:
            if data:
                yield kind, "\n".join(data)
            kind, data = "message", []
        elif line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
