"""Errors on the dashboard: the door's errors as an HTML page with the same status and
reason; without a (live) session, back to the sign-in page."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import urlencode

from fastapi import Request, Response
from fastapi.responses import RedirectResponse
from fastapi.routing import APIRoute

from studiolo._exceptions import StudioloError, Unauthenticated
from studiolo.faces.web.session import SESSION_COOKIE
from studiolo.faces.web.templating import render

__all__ = ["FRAGMENT_HEADER", "WebRoute", "safe_next", "sign_in_url"]

FRAGMENT_HEADER = "X-Studiolo-Fragment"  # set by dashboard.js: answer 401, not a redirect

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


class WebRoute(APIRoute):
    """A dashboard route: a `StudioloError` becomes a page, never JSON."""

    def get_route_handler(self) -> Handler:
        inner = super().get_route_handler()

        async def handler(request: Request) -> Response:
            try:
                return await inner(request)
            except Unauthenticated:
                return _to_sign_in(request)
            except StudioloError as exc:
                return render(request, "error.html", exc.status, error=exc)

        return handler


def sign_in_url(request: Request) -> str:
    """The sign-in page, asked to come back to a page the browser was sent away from."""
    if request.method != "GET" or request.url.path in ("/ui/", "/ui/sign-in"):
        return "/ui/sign-in"
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return "/ui/sign-in?" + urlencode({"next": here})


def safe_next(value: str) -> str:
    """A page to go back to after signing in: a path under /ui/ only (never another site)."""
    if not value.startswith("/ui/") or any(c in value for c in ("\\", "\r", "\n", "\t")) or "//" in value:
        return "/ui/"
    return value[:2000]


def _to_sign_in(request: Request) -> Response:
    if request.headers.get(FRAGMENT_HEADER):
        response: Response = Response(status_code=401)
    else:
        response = RedirectResponse(sign_in_url(request), status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/ui")
    return response
