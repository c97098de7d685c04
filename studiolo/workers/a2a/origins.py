"""Where the service may send a request on a remote organisation's behalf (issue 32, blind
SSRF): only to the origins the organisation's entry names, and never to a loopback,
link-local, private or otherwise non-public address unless the entry names that address
itself (an origin whose host is an IP literal, or `localhost`).

Every request of the requester (card, GetTask, stream hints, artifact URLs) and the card fetch
at delegation go through `OriginGuard`: the URL's origin must be allowed, the host's addresses
are resolved and checked before connecting, and the peer actually connected to is checked
again before the answer is used (a host name that resolved to a public address for the check
and to a private one for the connection is refused then; the request itself was sent)."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable

import httpx

from studiolo.core.remote import explicit_origin, origin_of

__all__ = ["OriginGuard", "OriginRefused"]

_Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str], Awaitable[list[str]]]  # host → its addresses (injected in tests)


class OriginRefused(httpx.TransportError):
    """The request would leave the organisation's origins, or reach a non-public address the
    organisation's entry does not name."""


def _literal(host: str) -> _Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _public(address: _Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast


class OriginGuard(httpx.AsyncBaseTransport):
    """Pass a request on only if its origin is one of `origins`, and every address its host
    has is public unless that origin names it explicitly."""

    def __init__(
        self, inner: httpx.AsyncBaseTransport, origins: Iterable[str], *, resolve: Resolver | None = None
    ) -> None:
        self._inner = inner
        self._origins = frozenset(origins)
        self._resolve = resolve or _resolve

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        origin = origin_of(str(request.url))
        if origin is None or origin not in self._origins:
            raise OriginRefused(
                f"{request.url.copy_with(query=None)} is not an allowed origin", request=request
            )
        if not explicit_origin(origin):
            await self._check_addresses(request)
        response = await self._inner.handle_async_request(request)
        if not explicit_origin(origin) and not _peer_public(response):
            await response.aclose()
            raise OriginRefused(f"{origin} connected to a non-public address", request=request)
        return response

    async def _check_addresses(self, request: httpx.Request) -> None:
        host = request.url.host
        try:
            found = await self._resolve(host)
        except OSError as exc:
            raise httpx.ConnectError(f"cannot resolve {host}: {exc}", request=request) from exc
        addresses = {_literal(a.split("%", 1)[0]) for a in found}
        if not addresses or not all(a is not None and _public(a) for a in addresses):
            raise OriginRefused(f"{host} resolves to a non-public address", request=request)

    async def aclose(self) -> None:
        await self._inner.aclose()


async def _resolve(host: str) -> list[str]:
    """The host's addresses, as the connection will look them up (the loop's getaddrinfo)."""
    found = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in found]


def _peer_public(response: httpx.Response) -> bool:
    stream = response.extensions.get("network_stream")
    peer = stream.get_extra_info("server_addr") if stream is not None else None
    if not peer:
        return True  # no socket to ask (an in-process transport): the resolution was checked
    address = _literal(str(peer[0]).split("%", 1)[0])
    return address is not None and _public(address)
