"""`operation`: a route registered from its row of the operation table (`api/operations.py`).

The route function holds what only it knows: how the door is called and how the answer is
rendered. Its method, path, status, summary, tag, response model and operation id come from
the table, so the OpenAPI document, the client and the docs read the same row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import APIRouter

from studiolo.api.operations import OPERATIONS

__all__ = ["FUNCTIONS", "operation"]

F = TypeVar("F", bound=Callable[..., Any])
FUNCTIONS: dict[str, Callable[..., Any]] = {}  # each row's route function, by operation name


def operation(router: APIRouter, name: str) -> Callable[[F], F]:
    """Register the decorated function as the route of the operation `name`."""
    op = OPERATIONS[name]

    def register(fn: F) -> F:
        router.add_api_route(
            op.path,
            fn,
            methods=[op.method],
            status_code=op.status,
            summary=op.summary,
            tags=[op.tag],
            operation_id=op.name,
            response_model=op.response_model(),
        )
        FUNCTIONS[name] = fn
        return fn

    return register
