"""The web face: a server-rendered dashboard over the one door, under /ui.

`install_web(app)` mounts it on the HTTP face's app: the pages, the forms, the static
files, and `GET /` → `/ui/`."""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.responses import Response
from starlette.staticfiles import StaticFiles

from studiolo.faces.web import actions, activity, listing, pages
from studiolo.faces.web.chain import ChainCache
from studiolo.faces.web.routing import WebRoute
from studiolo.faces.web.session import Sessions
from studiolo.faces.web.templating import make_environment

__all__ = ["install_web"]

_STATIC = Path(__file__).resolve().parent / "static"
_ICON = (_STATIC / "favicon.ico").read_bytes()


def install_web(app: Starlette, sessions: Sessions | None = None) -> None:
    app.state.web_sessions = sessions or Sessions()
    app.state.web_templates = make_environment()
    app.state.web_chain = ChainCache()
    app.state.web_rows = listing.RowsCache()
    for module in (pages, listing, activity, actions):
        app.router.routes.extend(module.router.routes)
    app.router.routes.append(WebRoute("/", "GET", pages.home))
    app.router.routes.append(WebRoute("/favicon.ico", "GET", _favicon))
    app.mount("/ui/static", StaticFiles(directory=_STATIC), name="web-static")


def _favicon() -> Response:
    """The icon's bytes in one body (a streamed file would wait on the client's disconnect)."""
    return Response(_ICON, media_type="image/x-icon", headers={"Cache-Control": "max-age=86400"})
