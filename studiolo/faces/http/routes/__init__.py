"""Routers split by concept. Each route: parse → call the Coordinator → render."""

from studiolo.api import requests

requests.build_all()  # before any route declares a body (see `build_all`)

from studiolo.faces.http.routes import (  # noqa: E402
    admin,
    completion,
    content,
    events,
    evidence,
    git,
    ops,
    remote,
    retention,
    work,
)

__all__ = ["ROUTERS"]

ROUTERS = (
    ops.router,
    admin.router,
    work.router,
    content.router,
    evidence.router,
    completion.router,
    events.router,
    remote.router,
    retention.router,
    git.router,
)
