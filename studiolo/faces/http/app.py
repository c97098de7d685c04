"""`create_app`: the Starlette application over the one door."""

from __future__ import annotations

from typing import IO

from opentelemetry.trace import TracerProvider
from starlette.applications import Starlette

from studiolo.faces.a2a import mount_a2a
from studiolo.faces.http import openapi, routes  # noqa: F401 - `routes` registers the functions
from studiolo.faces.http.feed import Feeds
from studiolo.faces.http.limits import BodyCaps, BodyLimit, InFlightLimit, StreamSlots
from studiolo.faces.http.path import PRINCIPAL_KEY, OperationPath, SlashRedirect, served
from studiolo.faces.http.problems import install_handlers
from studiolo.faces.mcp.mount import mount_mcp
from studiolo.faces.web import install_web
from studiolo.git.http import mount_git
from studiolo.observe.install import install as observe
from studiolo.observe.install import metrics_for
from studiolo.observe.tracing import traced, tracer_of
from studiolo.service import Coordinator
from studiolo.settings import Settings
from studiolo.workers.a2a.requester import mount_requester
from studiolo.workers.retention import mount_sweeper

__all__ = ["create_app"]


def create_app(
    coordinator: Coordinator,
    settings: Settings,
    *,
    event_poll_seconds: float = 0.5,
    tracer_provider: TracerProvider | None = None,
    log_stream: IO[str] | None = None,
) -> Starlette:
    """The HTTP face: the operation table's functions, served by `OperationPath` (one worker
    call each); the app serves their OpenAPI document, the dashboard and the mounted faces.
    Tracing (`settings.tracing`, or a `tracer_provider` given): the faces that answer requests
    get the door behind spans; the background loops (feeds, git, requester) the door itself."""
    app = Starlette(routes=list(openapi.ROUTES))
    tracer = tracer_of(tracer_provider) if settings.tracing or tracer_provider is not None else None
    background, coordinator = coordinator, traced(coordinator, tracer)
    app.state.coordinator = coordinator
    app.state.settings = settings
    app.state.metrics = metrics_for(settings)
    app.state.event_poll_seconds = event_poll_seconds
    app.state.stream_slots = StreamSlots(settings.max_streams_per_principal)
    app.state.feeds = Feeds(background, event_poll_seconds)  # one reader for the followed projects
    install_web(app)  # the dashboard, under /ui
    public = settings.public_url or f"http://{settings.host}:{settings.port}"
    mount_a2a(app, coordinator, public, poll_seconds=event_poll_seconds)  # the A2A face, under /a2a
    projector = mount_git(app, background, settings)  # the git projection, and clones under /git
    mount_mcp(app, coordinator, settings)  # the MCP face, under /mcp (mounted last: matched first)
    if settings.a2a_requester:
        mount_requester(app, background, settings)  # delegations to remote A2A agents
    mount_sweeper(app, background, settings.retention_sweep_seconds)  # expired evidence, on a timer
    install_handlers(app)
    ops = served(settings)
    app.router.default = SlashRedirect(ops, app.router.default)  # `/v1/me/` → `/v1/me`
    # outermost last: observed (ids, metrics, logs) → requests in flight → the operations' one
    # path; what it does not serve (mounts, 404s) → the body's size → the app's routes
    app.add_middleware(BodyLimit, caps=BodyCaps.from_settings(settings))
    app.add_middleware(OperationPath, door=coordinator, metrics=app.state.metrics, settings=settings, ops=ops)
    app.add_middleware(
        InFlightLimit,
        max_requests=settings.max_in_flight_requests,
        max_waiting=settings.max_queued_requests,
        wait_seconds=settings.queue_wait_seconds,
    )
    observe(app, background.store, app.state.metrics, settings, PRINCIPAL_KEY, tracer, log_stream)
    if projector is not None:
        projector.lagged = app.state.metrics.published
    return app
