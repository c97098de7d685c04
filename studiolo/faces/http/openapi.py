"""The OpenAPI document: every error response is the one problem+json shape."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from studiolo.api.operations import OPERATIONS
from studiolo.faces.http.problems import PROBLEM_MEDIA_TYPE, Problem

__all__ = ["install_openapi"]

_ERRORS = {
    "400": "invalid request (`invalid_request`, `invalid_path`, `blob_missing`, ...)",
    "401": "no or unknown bearer token (`unauthenticated`)",
    "403": "the caller lacks a live grant (`not_authorized`, `verifier_not_admitted`)",
    "404": "not found, or not visible to the caller (`task_not_found`, `not_found`)",
    "409": "a conflict or a rejected completion (`failed` lists every failing predicate)",
    "410": "the bytes asked for were deleted (`bytes_deleted`: when, by whom, why)",
    "413": "the body is too large (`payload_too_large`)",
    "422": "the body or a parameter does not match this schema (`invalid_request`)",
    "500": "an unexpected error (`internal_error`)",
    "503": "too many requests in progress on this server (`overloaded`); retry after `Retry-After` seconds",
}
_TOO_MANY_STREAMS = "the caller already holds its maximum of open event streams (`too_many_streams`)"
_RETRY_AFTER = {"Retry-After": {"description": "seconds to wait", "schema": {"type": "string"}}}
_DESCRIPTION = """\
The HTTP face of Studiolo's completion ledger. Authenticate with `Authorization: Bearer <token>`;
the caller is always derived from the token. Every error is RFC 9457 `application/problem+json`
with a stable `reason` and the list of `failed` predicates. Times are seconds since the Unix epoch.
See docs/api.md.
"""


def install_openapi(app: FastAPI) -> None:
    def build() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _document(app)
        return app.openapi_schema

    app.openapi = build  # type: ignore[method-assign]


def _document(app: FastAPI) -> dict[str, Any]:
    doc = get_openapi(title=app.title, version=app.version, description=_DESCRIPTION, routes=app.routes)
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    schemas["Problem"] = Problem.model_json_schema(ref_template="#/components/schemas/{model}")
    ref = {"$ref": "#/components/schemas/Problem"}
    for operations in doc["paths"].values():
        for op in operations.values():
            responses = op.setdefault("responses", {})
            for code, text in _ERRORS.items():
                responses[code] = _problem(text, ref)
            responses["503"]["headers"] = _RETRY_AFTER
            row = OPERATIONS.get(op.get("operationId", ""))
            if row is not None and 429 in row.errors:  # the table's own errors (the event stream's)
                responses["429"] = {**_problem(_TOO_MANY_STREAMS, ref), "headers": _RETRY_AFTER}
    return doc


def _problem(text: str, ref: dict[str, str]) -> dict[str, Any]:
    return {"description": text, "content": {PROBLEM_MEDIA_TYPE: {"schema": ref}}}
