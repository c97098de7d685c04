from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from studiolo.verifier import InProcessPort, Limits, Runner
from studiolo.verifier.isolation import Isolation
from tests.world import World

MakeRunner = Callable[..., Runner]


@pytest.fixture(scope="session")
def isolation() -> Isolation:
    """Checks run isolated in these tests, as they do by default (bwrap must be installed)."""
    return Isolation.probe()


@pytest.fixture
def make_runner(world: World, tmp_path: Path, isolation: Isolation) -> MakeRunner:
    """A runner for the world's verifier, in process, isolated, with short limits and a
    private workdir."""
    workdir = tmp_path / "verifier-work"
    workdir.mkdir()

    def make(**kw: Any) -> Runner:
        kw.setdefault("limits", Limits(timeout=60.0))
        kw.setdefault("clock", world.clock)
        kw.setdefault("workdir", workdir)
        if not kw.get("unsafe_no_isolation"):
            kw.setdefault("isolation", isolation)
        port = kw.pop("port", None) or InProcessPort(world.coord, world.verifier, world.project_id)
        return Runner(port, kw.pop("key", world.verifier_key), **kw)

    return make


def admit(world: World, name: str, kind: str, config: dict[str, Any], version: str = "1") -> str:
    """Admit a checker version for the world's verifier; return its `name@version`."""
    world.coord.register_checker(
        world.admin, world.project_id, name, version, kind, config, [world.verifier.id]
    )
    return f"{name}@{version}"
