"""Query parameters: those a function declares, bounded by a pydantic `Field` in `Annotated`
(`limit: Annotated[int, Field(ge=1, le=1000)] = 200`), gathered into one model; and a query
string parsed into it as FastAPI parsed one (the last value of a repeated name, blank values
kept, errors located at `("query", name)`). The HTTP face and the dashboard share it."""

from __future__ import annotations

import inspect
import urllib.parse
from typing import Any

from pydantic import BaseModel, ValidationError, create_model
from pydantic.fields import FieldInfo

from studiolo.api.requests import invalid_request

__all__ = ["field_of", "model_of", "parse_query"]


def field_of(param: inspect.Parameter) -> FieldInfo | None:
    """The pydantic field that bounds a parameter (`Annotated[T, Field(...)]`), if any."""
    meta = getattr(param.annotation, "__metadata__", ())
    return next((m for m in meta if isinstance(m, FieldInfo)), None)


def model_of(name: str, params: dict[str, inspect.Parameter]) -> type[BaseModel] | None:
    """The parameters as the fields of one model named `name` (None: no parameter)."""
    fields: dict[str, Any] = {n: (p.annotation, p.default) for n, p in params.items()}
    return create_model(name, **fields) if fields else None


def parse_query(model: type[BaseModel], raw: bytes) -> dict[str, Any]:
    """The query string's values of `model`'s fields, validated (refused: `invalid_request`)."""
    given = dict(urllib.parse.parse_qsl(raw.decode("latin-1"), keep_blank_values=True))
    try:
        parsed = model.model_validate({k: v for k, v in given.items() if k in model.model_fields})
    except ValidationError as exc:
        raise invalid_request([{**e, "loc": ("query", *e["loc"])} for e in exc.errors()]) from None
    return dict(parsed)
