"""The operation table: one row per HTTP operation of the API.

A row says what a reader of the API needs and what every layer used to spell on its own:
the method and path, the request body (a model of `studiolo.api.requests`, raw bytes, or
none), the response (a model of `studiolo.api.responses`), the success status, who may
call it (a bearer token, or anyone), the body cap (a `Settings` field), the errors beyond
the common ones, and a summary. From it:

- the HTTP face serves each row with the function registered under its name
  (`faces/http/operation.py`, `faces/http/path.py`: method, path, status, response model)
  and caps each body (`faces/http/limits.py`);
- the OpenAPI document is generated from it (`faces/http/openapi.py`);
- the Python client's plain methods are generated from it (`studiolo.api.generate`), and the
  others find their verb and URL here (`Client._at`);
- docs/api.md's table of operations is rendered from it (`render_table`; a test compares).

Models are named, not imported: the client imports this module on every call, and importing
the request models costs a CLI call about 20 ms (`Operation.request_model` resolves them).
"""

from __future__ import annotations

import importlib
import re
from typing import Any, Literal

__all__ = ["OPERATIONS", "Operation", "render_table"]

Body = Literal["json", "optional", "bytes", "none"]
Auth = Literal["bearer", "none"]


class Operation:
    """One HTTP operation. `name` is its operation id and the `Client` method that sends it.

    A plain class, not a dataclass: the client imports this table on every CLI call, and a
    dataclass costs that call a few milliseconds to build."""

    __slots__ = ("also", "auth", "body", "cap", "errors", "headers", "method", "name", "path", "query",
                 "request", "response", "status", "summary", "tag")  # fmt: skip

    def __init__(
        self,
        name: str,
        method: str,
        path: str,  # Starlette's spelling: `{path:path}` takes the rest of the URL, slashes included
        tag: str,
        summary: str,
        response: str,  # a model of `api.responses` (or `api.verification`), `list[...]`, or a media type
        request: str | None = None,  # a model of `api.requests`
        body: Body = "none",  # json: required; optional: an empty body is the model's defaults
        status: int = 200,
        auth: Auth = "bearer",
        cap: str = "max_json_bytes",  # the `Settings` field that caps the body
        query: tuple[str, ...] = (),  # query parameters (their bounds: the route's signature)
        errors: tuple[int, ...] = (),  # statuses beyond 400/401/403/404/413/422
        also: tuple[int, ...] = (),  # other success statuses, same body (a replay's 200)
        headers: tuple[str, ...] = (),  # response headers (described in `faces/http/openapi.py`)
    ) -> None:
        self.name, self.method, self.path, self.tag, self.summary = name, method, path, tag, summary
        self.response, self.request, self.body, self.status = response, request, body, status
        self.auth, self.cap, self.query, self.errors = auth, cap, query, errors
        self.also, self.headers = also, headers

    def __repr__(self) -> str:
        return f"Operation({self.name!r}, {self.method} {self.path})"

    @property
    def template(self) -> str:
        """The path with `str.format` fields (`{path:path}` becomes `{path}`)."""
        return _CONVERTOR.sub(r"{\1}", self.path)

    @property
    def params(self) -> tuple[str, ...]:
        """The path's parameters, in order."""
        return tuple(_PARAM.findall(self.template))

    def request_model(self) -> Any:
        """The request body's model class (None: the operation takes no JSON body)."""
        if self.request is None:
            return None
        return getattr(importlib.import_module("studiolo.api.requests"), self.request)

    def response_model(self) -> Any:
        """The response's model (`list[M]` for a list), None for a bytes, text or stream body."""
        if "/" in self.response or self.response == "dict":
            return dict[str, Any] if self.response == "dict" else None
        inner = self.response.removeprefix("list[").removesuffix("]")
        module = "studiolo.api.verification" if inner in _VERIFICATION else "studiolo.api.responses"
        model = getattr(importlib.import_module(module), inner)
        return list[model] if self.response.startswith("list[") else model  # type: ignore[valid-type]

    def cap_regex(self) -> re.Pattern[str]:
        """The paths this operation serves, as a regular expression (for the body's cap)."""
        pattern = re.escape(self.path)
        pattern = re.sub(r"\\\{\w+:path\\\}", ".+", pattern)
        return re.compile(re.sub(r"\\\{\w+\\\}", "[^/]+", pattern))


_CONVERTOR = re.compile(r"\{(\w+):\w+\}")
_PARAM = re.compile(r"\{(\w+)\}")
_VERIFICATION = {"CandidateTree", "VerificationItem"}
_JSON_BODY: dict[Body, str] = {"json": "JSON", "optional": "JSON, optional", "bytes": "bytes", "none": ""}


def _ops(*rows: Operation) -> dict[str, Operation]:
    table = {row.name: row for row in rows}
    assert len(table) == len(rows), "operation names are unique"
    return table


def _op(name: str, method: str, path: str, tag: str, response: str, summary: str, **more: Any) -> Operation:
    if more.get("request") and "body" not in more:
        more["body"] = "json"
    return Operation(name, method, path, tag, summary, response, **more)


_P = "/v1/projects/{project_id}"

OPERATIONS: dict[str, Operation] = _ops(
    # ops: no token needed
    _op("healthz", "GET", "/healthz", "ops", "HealthOut",
        "Liveness and readiness: the ledger answers and is initialized", auth="none", errors=(503,)),
    _op("metrics", "GET", "/metrics", "ops", "text/plain",
        "Prometheus text: requests, completions accepted/replayed/rejected by reason", auth="none"),
    _op("jwks", "GET", "/.well-known/jwks.json", "ops", "dict",
        "The Ed25519 keys that sign completion receipts", auth="none"),
    # admin
    _op("me", "GET", "/v1/me", "admin", "PrincipalOut", "The caller, as derived from its token"),
    _op("create_project", "POST", "/v1/projects", "admin", "ProjectOut",
        "Create a project (service admins)", request="ProjectIn", status=201),
    _op("projects", "GET", "/v1/projects", "admin", "list[ProjectOut]", "Projects the caller can see"),
    _op("orientation", "GET", f"{_P}/orientation", "admin", "OrientationOut", "What an agent reads first"),
    _op("add_principal", "POST", f"{_P}/principals", "admin", "IssuedOut",
        "Add a principal; its bearer token is in this response only", request="PrincipalIn", status=201),
    _op("principals", "GET", f"{_P}/principals", "admin", "list[PrincipalOut]", "The project's principals"),
    _op("rotate_token", "POST", "/v1/principals/{principal_id}/tokens", "admin", "IssuedOut",
        "Rotate: revoke every token of the principal and issue a new one (shown once)", status=201),
    _op("revoke_tokens", "POST", "/v1/principals/{principal_id}/tokens/revoke", "admin", "RevokedOut",
        "Revoke every token of the principal"),
    _op("reconfirm", "POST", "/v1/principals/{principal_id}/reconfirm", "admin", "ReconfirmedOut",
        "Vouch for a principal's tokens and verifier admissions a restore held (audited)"),
    _op("set_public_key", "PUT", "/v1/principals/{principal_id}/public-key", "admin", "PrincipalOut",
        "Register a verifier's Ed25519 key", request="PublicKeyIn"),
    _op("grant", "POST", f"{_P}/grants", "admin", "GrantOut",
        "Grant actions over path patterns", request="GrantIn", status=201),
    _op("grants", "GET", f"{_P}/grants", "admin", "list[GrantOut]", "The project's grants"),
    _op("revoke_grant", "POST", "/v1/grants/{grant_id}/revoke", "admin", "GrantOut",
        "Revoke a grant (a serialized, audited transition)"),
    _op("publish_policy", "POST", f"{_P}/policies", "admin", "PolicyOut",
        "Publish a new default policy", request="PolicyIn", status=201),
    _op("policies", "GET", f"{_P}/policies", "admin", "list[PolicyOut]", "The project's policies"),
    _op("register_checker", "POST", f"{_P}/checkers", "admin", "CheckerOut",
        "Admit a checker version", request="CheckerIn", status=201),
    _op("checkers", "GET", f"{_P}/checkers", "admin", "list[CheckerOut]", "The admitted checkers"),
    # work
    _op("create_task", "POST", f"{_P}/tasks", "work", "TaskOut",
        "Create a task and pin its contract", request="TaskIn", status=201),
    _op("tasks", "GET", f"{_P}/tasks", "work", "list[TaskSummaryOut]",
        "Tasks, each with its strongest established fact", query=("status", "limit", "offset")),
    _op("task", "GET", "/v1/tasks/{task_id}", "work", "TaskViewOut",
        "A task with attempts, candidates, receipts, completion"),
    _op("cancel", "POST", "/v1/tasks/{task_id}/cancel", "work", "TaskOut",
        "Cancel a task", request="CancelIn", body="optional"),
    _op("migrate", "POST", "/v1/tasks/{task_id}/migrate", "work", "TaskOut",
        "Change the contract explicitly (a new hash)", request="MigrateIn"),
    _op("claim", "POST", "/v1/tasks/{task_id}/attempts", "work", "AttemptOut",
        "Claim: start an attempt with a lease", request="ClaimIn", body="optional", status=201),
    _op("reassign", "POST", "/v1/tasks/{task_id}/reassign", "work", "AttemptOut",
        "Replace the current attempt", request="ReassignIn", status=201),
    _op("attempt", "GET", "/v1/attempts/{attempt_id}", "work", "AttemptOut", "An attempt"),
    _op("heartbeat", "POST", "/v1/attempts/{attempt_id}/heartbeat", "work", "AttemptOut",
        "Extend the lease of a live attempt", request="LeaseIn", body="optional"),
    _op("release", "POST", "/v1/attempts/{attempt_id}/release", "work", "AttemptOut",
        "Give the task back (it becomes open)"),
    _op("handoff", "POST", "/v1/attempts/{attempt_id}/handoff", "work", "HandoffOut",
        "Leave references for a successor", request="HandoffIn", status=201),
    _op("handoff_view", "GET", "/v1/tasks/{task_id}/handoff", "work", "HandoffViewOut",
        "The latest handoff, with what is still current"),
    # content
    _op("put_blob", "POST", "/v1/blobs", "content", "BlobOut",
        "Stage immutable bytes (raw body); returns the SHA-256 digest",
        body="bytes", status=201, cap="max_blob_bytes"),
    _op("get_blob", "GET", "/v1/blobs/{digest}", "content", "application/octet-stream", "A blob's bytes"),
    _op("collect_garbage", "POST", "/v1/blobs/collect", "content", "CollectedOut",
        "Delete the blobs nothing references, staged over `older_than_seconds` ago (service admins)",
        request="CollectGarbageIn"),
    _op("artifacts", "GET", f"{_P}/artifacts", "content", "list[ArtifactOut]",
        "Current artifacts under a prefix", query=("prefix",)),
    _op("artifact", "GET", f"{_P}/artifacts/{{path:path}}", "content", "ArtifactOut",
        "An artifact's current (or a past) revision; its bytes are at /v1/blobs/{digest}",
        query=("revision",)),
    _op("edit_artifact", "PUT", f"{_P}/artifacts/{{path:path}}", "content", "ArtifactOut",
        "A direct edit: compare-and-swap on the path's revision", request="ArtifactEditIn"),
    _op("collection", "GET", f"{_P}/collections", "content", "CollectionOut",
        "The collection revision of a prefix", query=("prefix",)),
    _op("send_candidate", "POST", "/v1/attempts/{attempt_id}/candidates", "content", "CandidateOut",
        "Submit immutable candidate bytes with their bases and declared dependencies",
        request="CandidateIn", status=201, cap="max_candidate_bytes"),
    _op("candidate", "GET", "/v1/candidates/{candidate_id}", "content", "CandidateOut", "A candidate"),
    _op("observe", "POST", f"{_P}/observations", "content", "ObservationOut",
        "Record a historical fact", request="ObservationIn", status=201),
    _op("observations", "GET", f"{_P}/observations", "content", "list[ObservationOut]",
        "Recorded observations", query=("target",)),
    # evidence
    _op("post_receipt", "POST", "/v1/candidates/{candidate_id}/receipts", "evidence", "ReceiptOut",
        "Post a signed receipt", request="ReceiptIn", status=201),
    _op("reuse_receipt", "POST", "/v1/candidates/{candidate_id}/receipts/reuse", "evidence", "ReceiptOut",
        "Link a receipt about the same bytes to this candidate (contracts that allow reuse)",
        request="ReuseIn", status=201),
    _op("candidate_tree", "GET", "/v1/candidates/{candidate_id}/tree", "evidence", "CandidateTree",
        "The exact file tree a verifier checks for this candidate"),
    _op("receipts", "GET", "/v1/candidates/{candidate_id}/receipts", "evidence", "list[ReceiptOut]",
        "A candidate's receipts"),
    _op("receipt", "GET", "/v1/receipts/{receipt_id}", "evidence", "ReceiptOut", "A receipt"),
    _op("verifications", "GET", "/v1/verifications", "evidence", "list[VerificationItem]",
        "Work for the calling verifier: criteria of current candidates it is admitted to check",
        query=("project_id", "limit")),
    # completion
    _op("send_completion", "POST", "/v1/tasks/{task_id}/complete", "completion", "CompletionOut",
        "Ask for the task to be recorded as completed (201; 200 on an idempotent replay)",
        request="CompleteIn", status=201, cap="max_completion_bytes", errors=(409,), also=(200,),
        headers=("Idempotent-Replay",)),
    # events
    _op("events", "GET", f"{_P}/events", "events", "list[EventOut]",
        "A page of the project's audit events", query=("after", "limit")),
    _op("stream_events", "GET", f"{_P}/events/stream", "events", "text/event-stream",
        "Follow the project's events as Server-Sent Events (`id` = seq; honours Last-Event-ID)",
        query=("after", "timeout"), errors=(429,)),
    # delegation
    _op("add_remote_org", "POST", f"{_P}/remote-orgs", "delegation", "RemoteOrgOut",
        "Pin a remote organisation's keys", request="RemoteOrgIn", status=201),
    _op("set_remote_origins", "PUT", f"{_P}/remote-orgs/{{name}}/origins", "delegation", "RemoteOrgOut",
        "Where the service may send requests for a remote organisation", request="OriginsIn"),
    _op("remote_orgs", "GET", f"{_P}/remote-orgs", "delegation", "list[RemoteOrgOut]",
        "Remote organisations and their pinned keys"),
    _op("revoke_remote_org", "POST", f"{_P}/remote-orgs/{{name}}/revoke", "delegation", "RemoteOrgOut",
        "Stop trusting a remote organisation (results in flight are refused)"),
    _op("delegate", "POST", "/v1/tasks/{task_id}/delegations", "delegation", "DelegationOut",
        "Delegate a task to a remote A2A agent", request="DelegateIn", status=201),
    _op("delegation", "GET", "/v1/delegations/{delegation_id}", "delegation", "DelegationOut",
        "A delegation and where its wait stands"),
    _op("delegations", "GET", f"{_P}/delegations", "delegation", "list[DelegationOut]",
        "The project's delegations to remote agents", query=("state",)),
    _op("review_queue", "GET", f"{_P}/delegations/review", "delegation", "list[DelegationOut]",
        "Indeterminate delegations awaiting an operator"),
    _op("review", "POST", "/v1/delegations/{delegation_id}/review", "delegation", "DelegationOut",
        "An operator finalizes or rejects (audited)", request="ReviewIn"),
    # retention (docs/operations.md, "Retention and deletion")
    _op("retention", "GET", f"{_P}/retention", "retention", "RetentionOut",
        "The project's retention periods, live legal holds and latest deleted bytes"),
    _op("set_retention", "PUT", f"{_P}/retention", "retention", "RetentionPolicyOut",
        "Change retention periods (project admins; audited)", request="RetentionIn"),
    _op("place_hold", "POST", f"{_P}/holds", "retention", "HoldOut",
        "Place a legal hold on a task or the project (project admins; audited)", request="HoldIn",
        status=201),
    _op("release_hold", "POST", "/v1/holds/{hold_id}/release", "retention", "HoldOut",
        "Release a legal hold (project admins; audited)", request="ReleaseHoldIn", errors=(409,)),
    _op("delete_bytes", "POST", f"{_P}/deletions", "retention", "TombstoneOut",
        "Delete bytes on request, leaving a tombstone (project admins; audited)",
        request="DeleteBytesIn", status=201, errors=(409,)),
    _op("sweep_retention", "POST", "/v1/retention/sweep", "retention", "list[SweepReportOut]",
        "Delete what is past its retention period, now (a project: its admins; all: service admins)",
        request="SweepIn", body="optional"),
    # git
    _op("git_status", "GET", f"{_P}/git", "git", "GitStatusOut",
        "The project's git branch: its commit, the ledger version it reflects, whether it lags"),
    _op("git_import", "POST", f"{_P}/git/import", "git", "GitImportOut",
        "Make a tree (a git commit's) the project's artifacts in one audited edit",
        request="GitImportIn", cap="max_request_bytes"),  # it lists every path of a tree
    _op("git_mirror", "POST", f"{_P}/git/mirrors", "git", "GitMirrorOut",
        "Push every publication to another remote too (retried with backoff; its lag in the status)",
        request="GitMirrorIn", status=201),
)  # fmt: skip


def render_table() -> str:
    """docs/api.md's table of operations (between its `operations` markers)."""
    lines = ["| operation | request | response | status | client |", "|---|---|---|---|---|"]
    for op in OPERATIONS.values():
        body = op.request or _JSON_BODY[op.body]
        if op.request and op.body == "optional":
            body += " (optional)"
        auth = "" if op.auth == "bearer" else " (no token)"
        lines.append(
            f"| `{op.method} {op.path}`{auth} | {body and f'`{body}`'} | `{op.response}` | {op.status}"
            f" | `{op.name}` |"
        )
    return "\n".join(lines) + "\n"
