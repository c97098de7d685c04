"""The Python client of Studiolo's HTTP API.

    with Client("http://127.0.0.1:8765", token) as c:
        task = c.claim(task_id)

Every method sends one operation of the table (`studiolo/api/operations.py`: its verb and
URL come from the row): it sends the operation's request model and returns its response
model, the same models the server validates with (`studiolo.api`); a request that does not
validate raises `InvalidRequest` before anything is sent. The methods that do only that are
generated from the table (`studiolo/_client_ops.py`); this module holds the plumbing and the
methods that do more. Errors come back as the same `StudioloError` subclasses the server
raised, rebuilt from problem+json. Pass `transport=` (an
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
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, TypeAdapter

from studiolo._client_ops import Operations
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
from studiolo.core.enums import FileMode
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


class Client(Operations):
    """The operations that only send a request model and read a response model are generated
    from the table (`studiolo/_client_ops.py`); the ones below do more, each for the reason
    `studiolo.api.generate.HAND_WRITTEN` gives."""

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

    def _call(
        self,
        out: type[M],
        name: str,
        /,
        *path: str,
        project: str | None = None,
        query: Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> M:
        return out.model_validate_json(self._row(name, path, project, query, fields).content)

    def _call_list(
        self,
        out: type[M],
        name: str,
        /,
        *path: str,
        project: str | None = None,
        query: Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> list[M]:
        content = self._row(name, path, project, query, fields).content
        return TypeAdapter(list[out]).validate_json(content)  # type: ignore[valid-type]

    def _row(
        self,
        name: str,
        path: Sequence[str],
        project: str | None,
        query: Mapping[str, Any] | None,
        fields: Mapping[str, Any],
    ) -> httpx.Response:
        """Send row `name`: its path's parameters in order, its request model built from `fields`."""
        op = OPERATIONS[name]
        names = [p for p in op.params if p != "project_id"]
        at = self._at(name, project, **dict(zip(names, path, strict=True)))
        kw: dict[str, Any] = {} if query is None else {"params": query}
        if op.request is not None:
            kw.update(_json(_request(op.request_model(), fields)))
        return self._send(*at, **kw)

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

    # ops and admin -----------------------------------------------------------
    def metrics(self) -> str:
        return self._send(*self._at("metrics")).text

    def jwks(self) -> dict[str, Any]:
        data: dict[str, Any] = self._send(*self._at("jwks")).json()
        return data

    def revoke_tokens(self, principal_id: str) -> int:
        return self._call(s.RevokedOut, "revoke_tokens", principal_id).revoked

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
        from studiolo.api import requests as q  # an A2A route: not a row of the table

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

    # work --------------------------------------------------------------------
    def tasks(
        self, status: str | None = None, limit: int = 200, offset: int = 0, *, project: str | None = None
    ) -> list[s.TaskSummaryOut]:
        params: dict[str, Any] = {"limit": limit, "offset": offset}
        if status:
            params["status"] = status
        return self._call_list(s.TaskSummaryOut, "tasks", project=project, query=params)

    # content -----------------------------------------------------------------
    def git_import(
        self,
        files: dict[str, tuple[str, FileMode]],
        source: dict[str, str],
        *,
        project: str | None = None,
    ) -> s.GitImportOut:
        """Make a tree (path → (digest, mode), blobs uploaded first) the project's artifacts."""
        tree = {p: {"digest": d, "mode": m} for p, (d, m) in files.items()}
        return self._call(s.GitImportOut, "git_import", files=tree, source=source, project=project)

    def put_blob(self, data: bytes) -> s.BlobOut:
        headers = {"Content-Type": "application/octet-stream"}
        return s.BlobOut.model_validate_json(
            self._send(*self._at("put_blob"), content=data, headers=headers).content
        )

    def get_blob(self, digest: str) -> bytes:
        """The blob's bytes, checked against `digest` (UntrustedResponse if they differ)."""
        data = self._send(*self._at("get_blob", digest=digest)).content
        if digest_bytes(data) != digest:
            raise UntrustedResponse(f"the server sent bytes that do not match {digest[:80]!r}")
        return data

    def collect_garbage(self, older_than_seconds: float = 3600.0) -> int:
        """Delete the blobs nothing references, staged over this long ago (service admins); how many."""
        return self._call(s.CollectedOut, "collect_garbage", older_than_seconds=older_than_seconds).collected

    def set_retention(
        self, periods: dict[str, float | None], *, project: str | None = None
    ) -> s.RetentionPolicyOut:
        """Change the named periods (seconds; None: for ever); the others stay."""
        from studiolo.api import requests as q  # sent with `exclude_unset`, which `_call` does not do

        body = q.RetentionIn(**periods).model_dump_json(exclude_unset=True)  # a kind left out stays
        at = self._at("set_retention", project)
        response = self._send(*at, content=body, headers={"Content-Type": "application/json"})
        return s.RetentionPolicyOut.model_validate_json(response.content)

    def artifacts(self, prefix: str = "", *, project: str | None = None) -> list[s.ArtifactOut]:
        return self._call_list(s.ArtifactOut, "artifacts", project=project, query={"prefix": prefix})

    def artifact(
        self, path: str, revision: int | None = None, *, project: str | None = None
    ) -> s.ArtifactOut:
        params = {"revision": revision} if revision is not None else {}
        return self._call(s.ArtifactOut, "artifact", path, project=project, query=params)

    def revision(self, path: str, *, project: str | None = None) -> int:
        """The current revision of a path; 0 if it never existed."""
        try:
            return self.artifact(path, project=project).revision
        except NotFound as exc:
            if exc.reason != "not_found":
                raise
            return 0

    def collection(self, prefix: str, *, project: str | None = None) -> s.CollectionOut:
        return self._call(s.CollectionOut, "collection", project=project, query={"prefix": prefix})

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
        return self._call(
            s.CandidateOut,
            "send_candidate",
            attempt_id,
            files=files,
            bases=bases,
            file_deps=file_deps,
            collection_deps=collection_deps,
            modes=modes,
        )

    def send_candidate(self, attempt_id: str, body: q.CandidateIn) -> s.CandidateOut:
        """`submit_candidate`, with the request already built (the MCP tools build it)."""
        at = self._at("send_candidate", attempt_id=attempt_id)
        return s.CandidateOut.model_validate_json(self._send(*at, **_json(body)).content)

    def observations(self, target: str = "", *, project: str | None = None) -> list[s.ObservationOut]:
        return self._call_list(s.ObservationOut, "observations", project=project, query={"target": target})

    # evidence ------------------------------------------------------------------
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

    def candidate_tree(self, candidate_id: str) -> CandidateTree:
        from studiolo.api.verification import CandidateTree

        return self._call(CandidateTree, "candidate_tree", candidate_id)

    def verifications(self, *, project: str | None = None, limit: int = 50) -> list[VerificationItem]:
        from studiolo.api.verification import VerificationItem

        params: dict[str, Any] = {"limit": limit}
        if project or self._project:
            params["project_id"] = project or self._project
        return self._call_list(VerificationItem, "verifications", query=params)

    # delegation to remote A2A agents ---------------------------------------------
    def delegations(self, state: str | None = None, *, project: str | None = None) -> list[s.DelegationOut]:
        params = {"state": state} if state else {}
        return self._call_list(s.DelegationOut, "delegations", project=project, query=params)

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
        from studiolo.api import requests as q  # `send_completion` takes the model (the MCP tools build it)

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
        return self._call_list(s.EventOut, "events", project=project, query={"after": after, "limit": limit})

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


def _request(model: type[BaseModel], fields: Mapping[str, Any]) -> BaseModel:
    """A row's request model from a method's arguments. A None is left out where the field has a
    default (a dict's None stands for the model's `{}`), and sent where the field requires it."""
    return model(**{k: v for k, v in fields.items() if v is not None or model.model_fields[k].is_required()})


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
