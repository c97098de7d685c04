"""The MCP face over streamable HTTP, mounted at `/mcp` in the service's app.

Authentication is the SDK's (`TokenVerifier` + `AuthSettings`) over our bearer tokens: the
verifier asks the door who a token is, a request without a valid token gets 401, and each
tool runs as that principal through `InProcessPort`. Stateless JSON responses: every POST
stands alone (any replica can answer it), and the parent app's lifespan runs the SDK's
session manager.

Host and Origin are validated (the transport spec's MUST, against DNS rebinding): `/mcp`
answers the Host of the configured public URL, of the bind address and of loopback, and an
Origin of the same (a request without Origin is not a browser's and passes); any other Host
is 421 and any other Origin 403. `Settings.mcp_allowed_hosts`/`mcp_allowed_origins` add more.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import AnyHttpUrl, Field
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from studiolo._exceptions import Unauthenticated
from studiolo.core.model import Principal
from studiolo.faces.bearer import leave_caller
from studiolo.faces.mcp.inprocess import InProcessPort
from studiolo.faces.mcp.port import StudioloPort
from studiolo.faces.mcp.server import build_server
from studiolo.service import Coordinator
from studiolo.settings import Settings

__all__ = ["MCP_PATH", "DoorTokenVerifier", "mount_mcp", "transport_security"]

MCP_PATH = "/mcp"
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


class PrincipalToken(AccessToken):
    """An access token that remembers the principal the door authenticated (not serialized)."""

    principal: Any = Field(default=None, exclude=True)


class DoorTokenVerifier:
    """The SDK's `TokenVerifier` over `Coordinator.authenticate` (unknown or revoked: None)."""

    def __init__(self, door: Coordinator) -> None:
        self.door = door

    async def verify_token(self, token: str) -> AccessToken | None:
        """From the authentication cache on the event loop when it knows the token (as the
        HTTP API does), else through the ledger in a worker thread."""
        try:
            principal = self.door.authenticate_cached(token)
            if principal is None:
                principal = await anyio.to_thread.run_sync(self.door.authenticate, token)
        except Unauthenticated:
            return None
        return PrincipalToken(
            token=token, client_id=principal.id, subject=principal.id, scopes=[], principal=principal
        )


def mount_mcp(app: Starlette, door: Coordinator, settings: Settings) -> None:
    """Serve the MCP tools at `/mcp`, and run the SDK's session manager in `app`'s lifespan."""
    server = build_server(
        lambda ctx: _port(door, ctx),
        token_verifier=DoorTokenVerifier(door),
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(settings.public_url or "http://127.0.0.1"), resource_server_url=None
        ),
    )
    asgi = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        max_request_body_size=min(settings.max_candidate_bytes, settings.max_request_bytes),
        transport_security=transport_security(settings),
    )
    # first: a request the route index does not hand over is matched by scanning the routes
    # in order, and /mcp is not one of the API's indexed routes
    app.router.routes.insert(0, Route(MCP_PATH, endpoint=_Attributed(asgi), include_in_schema=False))
    app.router.lifespan_context = _with(server.session_manager.run, app.router.lifespan_context)


class _Attributed:
    """The SDK's app, leaving the principal its bearer auth found (`scope["user"]`) where the
    request's log line looks for the caller, as the API's path does. A class, not a function:
    `Route` would take a function for a request-response endpoint and allow only GET."""

    def __init__(self, asgi: ASGIApp) -> None:
        self.asgi = asgi

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.asgi(scope, receive, send)
        finally:
            user = scope.get("user")
            token = user.access_token if isinstance(user, AuthenticatedUser) else None
            if isinstance(token, PrincipalToken) and isinstance(token.principal, Principal):
                leave_caller(scope, token.principal)


def transport_security(settings: Settings) -> TransportSecuritySettings:
    """The Host and Origin values `/mcp` answers: the public URL's, the bind address's, any
    loopback name on any port (a rebinding attack arrives under the attacker's name), and
    the settings' extra values."""
    hosts = [*settings.mcp_allowed_hosts, *(f"{h}:*" for h in _LOOPBACK), *_LOOPBACK]
    origins = [*settings.mcp_allowed_origins]
    origins += [f"{scheme}://{h}{p}" for scheme in ("http", "https") for h in _LOOPBACK for p in (":*", "")]
    for url in (settings.public_url, f"http://{settings.host}:{settings.port}"):
        parts = urlsplit(url)
        if parts.hostname is None:
            continue
        hosts.append(parts.netloc.lower())
        origins.append(f"{parts.scheme}://{parts.netloc}".lower())
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=_unique(hosts), allowed_origins=_unique(origins)
    )


def _unique(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _port(door: Coordinator, ctx: Context) -> StudioloPort:
    request = ctx.request_context.request
    user = request.scope.get("user") if request is not None else None
    token = user.access_token if isinstance(user, AuthenticatedUser) else None
    if not isinstance(token, PrincipalToken) or not isinstance(token.principal, Principal):
        raise Unauthenticated("a bearer token is required")
    return InProcessPort(door, token.principal)


def _with(
    inner: Callable[[], AbstractAsyncContextManager[None]],
    parent: Callable[[Any], AbstractAsyncContextManager[Any]],
) -> Callable[[Any], AbstractAsyncContextManager[Any]]:
    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[Any]:
        async with inner(), parent(app) as state:
            yield state

    return lifespan
