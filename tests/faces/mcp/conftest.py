from __future__ import annotations

from collections.abc import Iterator

import pytest

from studiolo.faces.http.server import ServerThread
from studiolo.settings import Settings
from tests.faces.helpers import issue_tokens
from tests.world import World


class Live:
    """The world behind a real uvicorn socket (the HTTP API and /mcp), with bearer tokens."""

    def __init__(self, world: World, url: str) -> None:
        self.world = world
        self.url = url
        self.tokens = issue_tokens(world)


@pytest.fixture
def live(world: World) -> Iterator[Live]:
    with ServerThread(world.coord, Settings(database_url=world.coord.store.url)) as server:
        yield Live(world, server.url)
