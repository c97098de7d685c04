"""`operation`: a row's function registered under its name in the operation table (`api/operations.py`).

The function holds what only it knows: how the door is called and how the answer is
rendered. Its method, path, status, summary, tag, response model and operation id are the
row's, so the one path (`path.py`), the OpenAPI document, the client and the docs read the
same row.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from studiolo.api.operations import OPERATIONS
from studiolo.faces.query import field_of, model_of

__all__ = ["FUNCTIONS", "INJECTED", "operation", "parameters"]

F = TypeVar("F", bound=Callable[..., Any])
FUNCTIONS: dict[str, Callable[..., Any]] = {}  # each row's route function, by operation name
# What the path hands a function by its parameter's name (the rest: the path's parameters,
# and query or header parameters bounded by a pydantic field in the signature).
INJECTED = frozenset({"body", "caller", "door", "metrics", "request", "response", "settings", "token"})


def operation(name: str) -> Callable[[F], F]:
    """Register the decorated function as the function of the operation `name`."""
    assert name in OPERATIONS, name

    def register(fn: F) -> F:
        FUNCTIONS[name] = fn
        return fn

    return register


def parameters(name: str) -> tuple[type[BaseModel] | None, type[BaseModel] | None]:
    """The query parameters (the row's `query`) and the headers the operation's function
    declares, each as one model (None: none); what the path validates and OpenAPI shows."""
    op, params = OPERATIONS[name], inspect.signature(FUNCTIONS[name], eval_str=True).parameters
    declared = {n: p for n, p in params.items() if n not in INJECTED and n not in op.params}
    unknown = [n for n, p in declared.items() if field_of(p) is None]
    assert not unknown, f"{name}: nothing fills {unknown}"
    query = {n: p for n, p in declared.items() if n in op.query}
    header = {n: p for n, p in declared.items() if n not in op.query}
    return model_of(f"{name}_query", query), model_of(f"{name}_header", header)
