"""An `httpx` transport that refuses response bodies over a cap: what a remote agent sends the
requester (cards, GetTask answers with inline artifacts) is hostile input of unbounded size."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx

__all__ = ["CappedTransport", "ResponseTooLarge"]


class ResponseTooLarge(httpx.TransportError):
    """The response body is larger than the cap (declared, or as it streamed in)."""


class CappedTransport(httpx.AsyncBaseTransport):
    def __init__(self, inner: httpx.AsyncBaseTransport, cap: int) -> None:
        self._inner = inner
        self._cap = cap

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._cap:
            await response.aclose()
            raise ResponseTooLarge(
                f"{request.url} answers {declared} bytes (cap {self._cap})", request=request
            )
        assert isinstance(response.stream, httpx.AsyncByteStream)
        stream = _Capped(response.stream, self._cap, request)
        return httpx.Response(
            response.status_code, headers=response.headers, stream=stream, extensions=response.extensions
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Capped(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, cap: int, request: httpx.Request) -> None:
        self._inner = inner
        self._cap = cap
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._cap:
                raise ResponseTooLarge(
                    f"{self._request.url}: more than {self._cap} bytes", request=self._request
                )
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()
