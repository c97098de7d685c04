from __future__ import annotations

from collections.abc import Iterator

import pytest

from studiolo.faces.http.server import ServerThread
from studiolo.settings import Settings
from tests.faces.helpers import Actors, in_process, issue_tokens
from tests.world import World


@pytest.fixture
def actors(world: World) -> Iterator[Actors]:
    """The world behind the HTTP app, in-process (no socket)."""
    with in_process(world) as a:
        yield a


@pytest.fixture
def live(world: World) -> Iterator[Actors]:
    """The world behind a real uvicorn socket (git clones through it)."""
    settings = Settings(database_url=world.coord.store.url)
    with ServerThread(world.coord, settings) as server:
        a = Actors(world, issue_tokens(world), url=server.url)
        try:
            yield a
        finally:
            a.close()
