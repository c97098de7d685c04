"""`create_app`: the FastAPI application over the one door."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.routing import APIRoute

from studiolo import __version__
from studiolo.faces.a2a import mount_a2a
from studiolo.faces.a2a.requester import mount_requester
from studiolo.faces.http.deps import AuthenticateFirst
from studiolo.faces.http.feed import Feeds
from studiolo.faces.http.limits import BodyCaps, BodyLimit, InFlightLimit, StreamSlots
from studiolo.faces.http.metrics import Metrics, MetricsMiddleware
from studiolo.faces.http.openapi import install_openapi
from studiolo.faces.http.path import OperationPath, served
from studiolo.faces.http.problems import install_handlers
from studiolo.faces.http.routes import ROUTERS
from studiolo.faces.mcp.mount import mount_mcp
from studiolo.faces.web import install_web
from studiolo.git.http import mount_git
from studiolo.service import Coordinator
from studiolo.settings import Settings

__all__ = ["create_app"]


def create_app(coordinator: Coordinator, settings: Settings, *, event_poll_seconds: float = 0.5) -> FastAPI:
    """The HTTP face: the operation table's routes, served by `OperationPath` (one worker call
    each); the FastAPI app renders their OpenAPI document and serves the mounted faces."""
    app = FastAPI(title="Studiolo", version=__version__, docs_url="/docs", redoc_url=None)
    app.state.coordinator = coordinator
    app.state.settings = settings
    app.state.metrics = Metrics()
    app.state.event_poll_seconds = event_poll_seconds
    app.state.stream_slots = StreamSlots(settings.max_streams_per_principal)
    app.state.feeds = Feeds(coordinator, event_poll_seconds)  # one reader for the followed projects
    for router in ROUTERS:
        app.include_router(router)
    install_web(app)  # the dashboard, under /ui
    public = settings.public_url or f"http://{settings.host}:{settings.port}"
    mount_a2a(app, coordinator, public, poll_seconds=event_poll_seconds)  # the A2A face, under /a2a
    mount_git(app, coordinator, settings)  # the git projection, and clones under /git
    mount_mcp(app, coordinator, settings)  # the MCP face, under /mcp (mounted last: matched first)
    if settings.a2a_requester:
        mount_requester(app, coordinator, settings)  # delegations to remote A2A agents
    install_handlers(app)
    install_openapi(app)
    # outermost last: metrics → requests in flight → the operations' one path; what it does
    # not serve (mounts, raw bodies, streams) → the caller → the body's size → FastAPI
    app.add_middleware(BodyLimit, caps=BodyCaps.from_settings(settings))
    app.add_middleware(AuthenticateFirst, door=coordinator)
    routes = (r for router in ROUTERS for r in router.routes if isinstance(r, APIRoute))
    app.add_middleware(
        OperationPath,
        door=coordinator,
        metrics=app.state.metrics,
        settings=settings,
        ops=served(routes, settings),
    )
    app.add_middleware(
        InFlightLimit,
        max_requests=settings.max_in_flight_requests,
        max_waiting=settings.max_queued_requests,
        wait_seconds=settings.queue_wait_seconds,
    )
    app.add_middleware(MetricsMiddleware, metrics=app.state.metrics)
    return app
