"""Every error as RFC 9457 problem+json, mapped from the one error tree in one place."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any

from pydantic import BaseModel, Field
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse

from studiolo._exceptions import CompletionRejected, StudioloError
from studiolo.api.refusals import RefusalDetailOut

__all__ = [
    "PROBLEM_MEDIA_TYPE",
    "Problem",
    "error_response",
    "install_handlers",
    "problem_response",
    "unexpected_response",
]

PROBLEM_MEDIA_TYPE = "application/problem+json"
_log = logging.getLogger("studiolo.http")
_HTTP_REASONS = {
    401: "unauthenticated",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
}


class Problem(BaseModel):
    """RFC 9457 problem details, with Studiolo's stable `reason` and every `failed` predicate."""

    type: str = Field(description="`urn:studiolo:reason:<reason>`; see docs/reasons.md")
    title: str
    status: int
    detail: str
    reason: str = Field(description="a stable reason code (the first of `failed`)")
    failed: list[str] = Field(description="every failing predicate, in evaluation order")
    details: list[RefusalDetailOut] = Field(
        default_factory=list,
        description="a refused completion: what each failed predicate found, as the caller may see it",
    )


def problem_response(
    status: int,
    reason: str,
    detail: str,
    failed: Sequence[str] = (),
    *,
    title: str | None = None,
    headers: Mapping[str, str] | None = None,
    details: Sequence[Mapping[str, Any]] = (),
) -> JSONResponse:
    body = Problem(
        type=f"urn:studiolo:reason:{reason}",
        title=title or HTTPStatus(status).phrase,
        status=status,
        detail=detail,
        reason=reason,
        failed=list(failed) or [reason],
        details=[RefusalDetailOut.model_validate(d) for d in details],
    )
    return JSONResponse(body.model_dump(), status, headers=headers, media_type=PROBLEM_MEDIA_TYPE)


def error_response(exc: StudioloError) -> JSONResponse:
    """The answer to an error of the door (the app's handler, and the one path's)."""
    title = "Completion rejected" if isinstance(exc, CompletionRejected) else None
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    return problem_response(
        exc.status, exc.reason, exc.detail, exc.failed, title=title, headers=headers, details=exc.details
    )


def unexpected_response(exc: BaseException) -> JSONResponse:
    _log.exception("unexpected error", exc_info=exc)
    return problem_response(500, "internal_error", "an unexpected error occurred; it has been logged")


async def _studiolo_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StudioloError)
    return error_response(exc)


async def _http_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    reason = _HTTP_REASONS.get(exc.status_code, "invalid_request")
    return problem_response(exc.status_code, reason, str(exc.detail), headers=exc.headers)


async def _gone(_request: Request, _exc: Exception) -> JSONResponse:
    """The client hung up, or its body missed its deadline: no one reads this, and it is no error of ours."""
    return problem_response(400, "invalid_request", "the client disconnected before its request was complete")


async def _unexpected(_request: Request, exc: Exception) -> JSONResponse:
    return unexpected_response(exc)


def install_handlers(app: Starlette) -> None:
    app.add_exception_handler(StudioloError, _studiolo_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(ClientDisconnect, _gone)
    app.add_exception_handler(Exception, _unexpected)
