from __future__ import annotations

from pathlib import Path

import pytest

from tests.world import FakeClock, World, build_world


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def world(tmp_path: Path, clock: FakeClock) -> World:
    return build_world(tmp_path, clock)
