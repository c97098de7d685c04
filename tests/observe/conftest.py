from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.faces.helpers import Actors, in_process
from tests.world import World


@pytest.fixture
def actors(world: World) -> Iterator[Actors]:
    """The world behind the HTTP app, in-process (no socket)."""
    with in_process(world) as a:
        yield a
