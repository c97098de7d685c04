"""Errors on the dashboard: the door's errors as an HTML page with the same status and
reason; without a (live) session, back to the sign-in page."""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from studiolo.faces.web.session import SESSION_COOKIE

__all__ = ["FRAGMENT_HEADER", "safe_next", "sign_in_url", "to_sign_in"]

FRAGMENT_HEADER = "X-Studiolo-Fragment"  # set by dashboard.js: answer 401, not a redirect


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


def to_sign_in(request: Request) -> Response:
    """Without a (live) session: a page goes to the sign-in page, a fragment gets a 401."""
    if request.headers.get(FRAGMENT_HEADER):
        response: Response = Response(status_code=401)
    else:
        response = RedirectResponse(sign_in_url(request), status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/ui")
    return response
