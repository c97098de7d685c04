"""`RenderedRoute`: a plain `def` route whose response is validated and rendered in the
threadpool call that runs the route, not in one more.

FastAPI runs a `def` route in the threadpool and then, for its response model, validates the
returned value in the threadpool *again* (one more hop on every request) before rendering it
on the event loop. This route class wraps the route's function so that the same validation
(`response_field.validate`) and the same rendering (`serialize_json`, as FastAPI's own fast
path: `Response(..., media_type="application/json")`, the route's status code or the one the
route set on its `Response` parameter, that parameter's headers after) run in the route's
own call, which then returns the finished `Response`. The declared response model, the
OpenAPI schema and every byte on the wire stay as they were. Routes with a response class of
their own, `async def` routes and generators are left to FastAPI.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import routing
from fastapi.datastructures import DefaultPlaceholder
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import ResponseValidationError
from fastapi.routing import APIRoute
from fastapi.utils import is_body_allowed_for_status_code
from starlette.requests import Request
from starlette.responses import Response

__all__ = ["RenderedRoute"]

_MARK = "__studiolo_rendered__"


class RenderedRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        route = _effective(self)  # the route as included in the app (FastAPI builds one per inclusion)
        dependant: Dependant | None = getattr(route, "dependant", None)
        if dependant is not None and _renderable(route, dependant):
            dependant.call = _rendering(route, dependant)
        return super().get_route_handler()


def _effective(route: APIRoute) -> Any:
    """What FastAPI's own `get_route_handler` builds from: the included route's context."""
    context_var = getattr(routing, "_effective_route_context_var", None)
    context = context_var.get() if context_var is not None else None
    return context if context is not None and getattr(context, "original_route", None) is route else route


def _renderable(route: Any, dependant: Dependant) -> bool:
    call = dependant.call
    return (
        call is not None
        and not getattr(call, _MARK, False)
        and inspect.isfunction(call)
        and not inspect.iscoroutinefunction(call)
        and not inspect.isgeneratorfunction(call)
        and route.response_field is not None
        and isinstance(route.response_class, DefaultPlaceholder)
        and not any(_sets_response(d) for d in dependant.dependencies)
    )


def _sets_response(dependant: Dependant) -> bool:
    """Whether a dependency takes the `Response` parameter (its status or headers would count)."""
    return dependant.response_param_name is not None or any(_sets_response(d) for d in dependant.dependencies)


def _rendering(route: Any, dependant: Dependant) -> Callable[..., Any]:
    call: Callable[..., Any] = dependant.call  # type: ignore[assignment]
    field, status_code, response_name = route.response_field, route.status_code, dependant.response_param_name
    options = {
        "include": route.response_model_include,
        "exclude": route.response_model_exclude,
        "by_alias": route.response_model_by_alias,
        "exclude_unset": route.response_model_exclude_unset,
        "exclude_defaults": route.response_model_exclude_defaults,
        "exclude_none": route.response_model_exclude_none,
    }

    @functools.wraps(call)
    def rendered(**values: Any) -> Any:
        raw = call(**values)
        if isinstance(raw, Response):
            return raw
        value, errors = field.validate(raw, {}, loc=("response",))
        if errors:
            raise ResponseValidationError(errors=errors, body=raw)
        given: Response | None = values.get(response_name) if response_name else None
        status = status_code or (given.status_code if given is not None else None)
        if given is not None and given.status_code:
            status = given.status_code
        content = field.serialize_json(value, **options)
        if status is None:
            response = Response(content, media_type="application/json")
        else:
            response = Response(content, status_code=status, media_type="application/json")
        if not is_body_allowed_for_status_code(response.status_code):
            response.body = b""
        if given is not None:
            response.headers.raw.extend(given.headers.raw)
        return response

    setattr(rendered, _MARK, True)
    return rendered
