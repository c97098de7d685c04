from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from studiolo.settings import Settings
from tests.store.pgdb import fresh_database, server_url
from tests.world import FakeClock, World, build_world


@pytest.fixture(autouse=True)
def _private_cli_state(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The CLI remembers claims under its state directory: never the real ~/.local/state.
    A subprocess inherits this; one that builds its own environment sets its own."""
    state = tmp_path_factory.mktemp("cli-state")
    monkeypatch.setenv("STUDIOLO_STATE_DIR", str(state))
    monkeypatch.setenv("XDG_STATE_HOME", str(state / "xdg"))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def world(tmp_path: Path, clock: FakeClock) -> World:
    return build_world(tmp_path, clock)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL of an empty ledger database: a SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield Settings.sqlite_url(tmp_path / "ledger.db")
        return
    with fresh_database(server_url()) as url:
        yield url


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh PostgreSQL database (PostgreSQL-only tests)."""
    with fresh_database(server_url()) as url:
        yield url
