"""`operation`: a route registered from its row of the operation table (`api/operations.py`).

The route function holds what only it knows: how the door is called and how the answer is
rendered. Its method, path, status, summary, tag, response model and operation id come from
the table, so the OpenAPI document, the client and the docs read the same row.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import APIRouter
from pydantic import BaseModel, create_model
from pydantic.fields import FieldInfo

from studiolo.api.operations import OPERATIONS

__all__ = ["FUNCTIONS", "INJECTED", "operation", "parameters"]

F = TypeVar("F", bound=Callable[..., Any])
FUNCTIONS: dict[str, Callable[..., Any]] = {}  # each row's route function, by operation name
# What the path hands a function by its parameter's name (the rest: the path's parameters,
# and query or header parameters bounded by a pydantic field in the signature).
INJECTED = frozenset({"body", "caller", "door", "metrics", "request", "response", "settings", "token"})


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


def parameters(name: str) -> tuple[type[BaseModel] | None, type[BaseModel] | None]:
    """The query parameters (the row's `query`) and the headers the operation's function
    declares, each as one model (None: none); what the path validates and OpenAPI shows."""
    op, params = OPERATIONS[name], inspect.signature(FUNCTIONS[name], eval_str=True).parameters
    declared = {n: p for n, p in params.items() if n not in INJECTED and n not in op.params}
    unknown = [n for n, p in declared.items() if _field(p) is None]
    assert not unknown, f"{name}: nothing fills {unknown}"
    query = {n: p for n, p in declared.items() if n in op.query}
    header = {n: p for n, p in declared.items() if n not in op.query}
    return _model(f"{name}_query", query), _model(f"{name}_header", header)


def _field(param: inspect.Parameter) -> FieldInfo | None:
    meta = getattr(param.annotation, "__metadata__", ())
    return next((m for m in meta if isinstance(m, FieldInfo)), None)


def _model(name: str, params: dict[str, inspect.Parameter]) -> type[BaseModel] | None:
    fields: dict[str, Any] = {n: (p.annotation, p.default) for n, p in params.items()}
    return create_model(name, **fields) if fields else None
