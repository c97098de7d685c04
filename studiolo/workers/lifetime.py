"""A background worker run for an app's lifetime: started when the app starts, stopped (off
the event loop) when it stops, around whatever the app's lifespan already does."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, Protocol

__all__ = ["Background", "for_app_lifetime"]


class Background(Protocol):
    def start(self) -> None: ...

    def stop(self) -> None: ...


def for_app_lifetime(app: Any, worker: Background) -> None:
    """Wrap `app`'s lifespan so that `worker` runs while the app does."""
    parent = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[Any]:
        worker.start()
        try:
            async with parent(a) as state:
                yield state
        finally:
            await asyncio.to_thread(worker.stop)

    app.router.lifespan_context = lifespan
