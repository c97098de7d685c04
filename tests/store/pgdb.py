"""Throwaway PostgreSQL databases for tests: one per test, dropped afterwards.

The server comes from STUDIOLO_TEST_DATABASE_URL (e.g.
postgresql+psycopg://postgres@127.0.0.1:5432/test); without it, or when the server does not
answer, PostgreSQL tests are skipped with a message that says so.
"""

from __future__ import annotations

import os
import secrets
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from sqlalchemy.engine import make_url

ENV = "STUDIOLO_TEST_DATABASE_URL"


def _conninfo(url: str) -> str:
    u = make_url(url)
    return u.set(drivername="postgresql").render_as_string(hide_password=False)


def server_url() -> str:
    """The configured PostgreSQL URL, or skip the test with the reason."""
    import pytest  # only the tests skip; bench/scale.py uses fresh_database alone

    url = os.environ.get(ENV)
    if not url:
        pytest.skip(
            f"PostgreSQL tests need {ENV} (e.g. postgresql+psycopg://postgres@127.0.0.1:5432/test); "
            "`make test` starts a local PostgreSQL, creates the database and sets it"
        )
    try:
        with psycopg.connect(_conninfo(url), connect_timeout=3):
            pass
    except psycopg.Error as exc:
        pytest.skip(f"PostgreSQL at {ENV} is unreachable: {str(exc).strip()[:200]}")
    return url


@contextmanager
def fresh_database(base_url: str) -> Iterator[str]:
    """CREATE DATABASE studiolo_t_<random>; yield its URL; DROP it (closing stray sessions)."""
    name = f"studiolo_t_{secrets.token_hex(6)}"
    with psycopg.connect(_conninfo(base_url), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_url(base_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(_conninfo(base_url), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class OnFreshPostgres:
    """Mixin for a Hypothesis state machine: each example runs on a fresh PostgreSQL
    database (`server` is set by the test before it runs; see `server_url`)."""

    server = ""
    _database: Any

    def database_url(self) -> str | None:
        self._database = fresh_database(self.server)
        return str(self._database.__enter__())

    def teardown(self) -> None:
        super().teardown()  # type: ignore[misc]
        self._database.__exit__(None, None, None)


def write_from_threads(stores: list[Any], write: Callable[[Any], None], times: int, gate: Any = None) -> int:
    """Two threads per store each run `store.write(write, gate)` `times` times, all at once; raise
    the first error any of them met; return how many threads ran."""
    errors: list[BaseException] = []

    def work(st: Any) -> None:
        try:
            for _ in range(times):
                st.write(write, gate)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(st,)) for st in stores for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return len(threads)
