"""The OpenAPI document, generated from the operation table (`api/operations.py`): each row's
method, path, summary, tag, request, response, status, auth and errors; the query and header
parameters are those the row's function declares (the models `faces/http/path.py` validates
them with). Every error response is the one problem+json shape.

`ROUTES` serve it at `/openapi.json`, with the interactive Swagger UI page at `/docs`."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from studiolo import __version__
from studiolo.api.operations import OPERATIONS, Operation
from studiolo.faces.http.operation import parameters
from studiolo.faces.http.problems import PROBLEM_MEDIA_TYPE, Problem

__all__ = ["ROUTES", "openapi_document"]

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
_HEADERS: dict[str, dict[str, Any]] = {  # the response headers a row may name (`Operation.headers`)
    "Idempotent-Replay": {
        "description": "`true` when an identical request id was seen before and nothing was written",
        "schema": {"type": "string", "enum": ["true", "false"]},
    },
}
_BINARY = {"schema": {"type": "string", "format": "binary"}}
_BEARER = {
    "type": "http",
    "scheme": "bearer",
    "description": "a Studiolo token: `Authorization: Bearer stl_…`",
}
_REF = "#/components/schemas/{model}"
_DESCRIPTION = """\
The HTTP face of Studiolo's completion ledger. Authenticate with `Authorization: Bearer <token>`;
the caller is always derived from the token. Every error is RFC 9457 `application/problem+json`
with a stable `reason` and the list of `failed` predicates. Times are seconds since the Unix epoch.
See docs/api.md.
"""


@functools.cache
def openapi_document() -> dict[str, Any]:
    """The document of every row of the table (built once; the rows' functions registered)."""
    _, defs = models_json_schema(_models(), ref_template=_REF)
    schemas = dict(sorted(defs.get("$defs", {}).items()))
    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS.values():
        paths.setdefault(op.template, {})[op.method.lower()] = _operation(op)
    return {
        "openapi": "3.1.0",
        "info": {"title": "Studiolo", "version": __version__, "description": _DESCRIPTION},
        "paths": paths,
        "components": {"schemas": schemas, "securitySchemes": {"HTTPBearer": _BEARER}},
    }


def _models() -> list[tuple[type[BaseModel], JsonSchemaMode]]:
    """Request models as they validate, response models as they serialize (as FastAPI had it)."""
    found: dict[tuple[str, JsonSchemaMode], type[BaseModel]] = {("Problem", "serialization"): Problem}
    for op in OPERATIONS.values():
        for model, mode in ((op.request_model(), "validation"), (op.response_model(), "serialization")):
            inner = getattr(model, "__args__", (model,))[0]
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                found[inner.__name__, mode] = inner  # type: ignore[index]
    return [(model, mode) for (_, mode), model in found.items()]


def _operation(op: Operation) -> dict[str, Any]:
    doc: dict[str, Any] = {"tags": [op.tag], "summary": op.summary, "operationId": op.name}
    params = [_param(name, "path", {"type": "string", "title": _title(name)}, True) for name in op.params]
    params += _declared(op)
    if params:
        doc["parameters"] = params
    body = _request_body(op)
    if body is not None:
        doc["requestBody"] = body
    doc["responses"] = _responses(op)
    if op.auth == "bearer":
        doc["security"] = [{"HTTPBearer": []}]
    return doc


def _declared(op: Operation) -> list[dict[str, Any]]:
    """The query parameters and headers the operation's function declares (`parameters`)."""
    found = []
    for where, model in zip(("query", "header"), parameters(op.name), strict=True):
        schema = model.model_json_schema(ref_template=_REF) if model is not None else {"properties": {}}
        for name, prop in schema["properties"].items():
            if "default" in prop and prop["default"] is None:
                del prop["default"]
            wire = name if where == "query" else name.replace("_", "-")
            found.append(_param(wire, where, prop, name in schema.get("required", ())))
            if "description" in prop:
                found[-1]["description"] = prop["description"]
    return found


def _param(name: str, where: str, schema: dict[str, Any], required: bool) -> dict[str, Any]:
    return {"name": name, "in": where, "required": required, "schema": schema}


def _request_body(op: Operation) -> dict[str, Any] | None:
    if op.body == "bytes":
        return {"required": True, "content": {"application/octet-stream": _BINARY}}
    if op.request is None:
        return None
    schema: dict[str, Any] = {"$ref": _REF.format(model=op.request)}
    if op.body == "optional":
        return {
            "content": {
                "application/json": {"schema": {"anyOf": [schema, {"type": "null"}], "title": "Body"}}
            }
        }
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def _responses(op: Operation) -> dict[str, Any]:
    content: dict[str, Any]
    if op.response == "application/octet-stream":
        content = {op.response: _BINARY}
    elif "/" in op.response:
        content = {op.response: {"schema": {"type": "string"}}}
    elif op.response == "dict":
        content = {"application/json": {"schema": {"type": "object", "additionalProperties": True}}}
    else:
        inner = op.response.removeprefix("list[").removesuffix("]")
        schema: dict[str, Any] = {"$ref": _REF.format(model=inner)}
        if op.response.startswith("list["):
            schema = {"type": "array", "items": schema}
        content = {"application/json": {"schema": schema}}
    success: dict[str, Any] = {"description": "Successful Response", "content": content}
    if op.headers:
        success["headers"] = {name: _HEADERS[name] for name in op.headers}
    responses = {str(status): success for status in (op.status, *op.also)}
    ref = {"$ref": _REF.format(model="Problem")}
    for code, text in _ERRORS.items():
        responses[code] = _problem(text, ref)
    responses["503"]["headers"] = _RETRY_AFTER
    if 429 in op.errors:  # the table's own errors (the event stream's)
        responses["429"] = {**_problem(_TOO_MANY_STREAMS, ref), "headers": _RETRY_AFTER}
    return responses


def _problem(text: str, ref: dict[str, str]) -> dict[str, Any]:
    return {"description": text, "content": {PROBLEM_MEDIA_TYPE: {"schema": ref}}}


def _title(name: str) -> str:
    return name.replace("_", " ").title()


_SWAGGER = Path(__file__).resolve().parent / "swagger"


async def _document(request: Request) -> JSONResponse:
    """The document; behind a `root_path`, with that path as its first server."""
    root, doc = request.scope.get("root_path", "").rstrip("/"), openapi_document()
    if root and root not in {server.get("url") for server in doc.get("servers", [])}:
        doc = {**doc, "servers": [{"url": root}, *doc.get("servers", [])]}
    return JSONResponse(doc)


async def _swagger_ui(request: Request) -> HTMLResponse:
    root = request.scope.get("root_path", "").rstrip("/")
    return HTMLResponse(_page("docs.html").replace("{root}", root))


async def _oauth2_redirect(_request: Request) -> HTMLResponse:
    return HTMLResponse(_page("oauth2-redirect.html"))


@functools.cache
def _page(name: str) -> str:
    return (_SWAGGER / name).read_text(encoding="utf-8")


ROUTES = [
    Route("/openapi.json", _document, include_in_schema=False),
    Route("/docs", _swagger_ui, include_in_schema=False),
    Route("/docs/oauth2-redirect", _oauth2_redirect, include_in_schema=False),
]
