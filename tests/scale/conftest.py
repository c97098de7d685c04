"""`ledger_url`: an empty ledger database on each back-end, for the multi-process tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from studiolo.settings import Settings
from tests.store.pgdb import fresh_database, server_url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def ledger_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield Settings.sqlite_url(tmp_path / "ledger.db")
        return
    with fresh_database(server_url()) as url:
        yield url
