"""An `httpx` transport for everything the service asks of a remote agent: the response body
is refused over a cap, and the whole exchange — connect, headers and body — has a total
deadline. httpx's own timeouts are per read, so a server sending a byte a second never trips
them; what a remote agent sends (cards, GetTask answers with inline artifacts, files) is
hostile input of unbounded size and pace.

An event stream (`text/event-stream`: stream hints) gets the deadline for its headers only:
it is meant to stay open, nothing waits on it, and its events are capped all the same."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx

from studiolo.workers.a2a.origins import OriginGuard

__all__ = ["CappedTransport", "DeadlineExceeded", "ResponseTooLarge", "remote_client"]


class ResponseTooLarge(httpx.TransportError):
    """The response body is larger than the cap (declared, or as it streamed in)."""


class DeadlineExceeded(httpx.TimeoutException):
    """The exchange took longer than its total deadline, however steadily bytes came."""


class CappedTransport(httpx.AsyncBaseTransport):
    def __init__(self, inner: httpx.AsyncBaseTransport, cap: int, deadline: float | None = None) -> None:
        self._inner = inner
        self._cap = cap
        self._deadline = deadline  # seconds for the whole exchange; None: no total deadline

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        loop = asyncio.get_running_loop()
        end = None if self._deadline is None else loop.time() + self._deadline
        try:
            async with asyncio.timeout_at(end):
                response = await self._inner.handle_async_request(request)
        except TimeoutError as exc:
            raise DeadlineExceeded(
                f"{request.url}: no answer within {self._deadline} s", request=request
            ) from exc
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._cap:
            await response.aclose()
            raise ResponseTooLarge(
                f"{request.url} answers {declared} bytes (cap {self._cap})", request=request
            )
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            end = None
        assert isinstance(response.stream, httpx.AsyncByteStream)
        stream = _Capped(response.stream, self._cap, request, end)
        return httpx.Response(
            response.status_code, headers=response.headers, stream=stream, extensions=response.extensions
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Capped(httpx.AsyncByteStream):
    def __init__(
        self, inner: httpx.AsyncByteStream, cap: int, request: httpx.Request, end: float | None
    ) -> None:
        self._inner = inner
        self._cap = cap
        self._request = request
        self._end = end  # loop time by which the body must be complete

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        chunks = self._inner.__aiter__()
        while True:
            try:
                async with asyncio.timeout_at(self._end):
                    chunk = await chunks.__anext__()
            except StopAsyncIteration:
                return
            except TimeoutError as exc:
                raise DeadlineExceeded(
                    f"{self._request.url}: body past its deadline", request=self._request
                ) from exc
            seen += len(chunk)
            if seen > self._cap:
                raise ResponseTooLarge(
                    f"{self._request.url}: more than {self._cap} bytes", request=self._request
                )
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


def remote_client(
    origins: frozenset[str] | tuple[str, ...],
    cap: int,
    deadline: float,
    *,
    headers: dict[str, str] | None = None,
) -> httpx.AsyncClient:
    """An AsyncClient for a remote organisation's agent: only its `origins` (and no non-public
    address they do not name), capped bodies, a total deadline per exchange (resolution
    included), per-read timeouts no longer than it, no redirects."""
    transport = CappedTransport(OriginGuard(httpx.AsyncHTTPTransport(), origins), cap, deadline)
    return httpx.AsyncClient(
        headers=headers, timeout=httpx.Timeout(deadline), transport=transport, follow_redirects=False
    )
