"""Routers split by concept. Each route: parse → call the Coordinator → render."""

from studiolo.faces.http.routes import admin, completion, content, events, evidence, ops, work

__all__ = ["ROUTERS"]

ROUTERS = (
    ops.router,
    admin.router,
    work.router,
    content.router,
    evidence.router,
    completion.router,
    events.router,
)
