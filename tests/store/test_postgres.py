"""PostgreSQL specifics: the writer gate, SERIALIZABLE retries without it, lost connections."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from sqlalchemy.engine import make_url

from studiolo.store import Store, Tx
from studiolo.store.engine import WRITER_GATE
from tests.store.pgdb import write_from_threads

pytestmark = pytest.mark.postgres


@pytest.fixture
def store(pg_url: str) -> Iterator[Store]:
    st = Store(pg_url)
    st.upgrade()
    yield st
    st.dispose()


def _raw(url: str) -> psycopg.Connection[tuple[object, ...]]:
    conninfo = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    return psycopg.connect(conninfo, autocommit=True)


# Only this test's (fresh) database: other PostgreSQL clients on the server hold locks too.
_THIS_DB = " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"


def _increment(tx: Tx) -> None:
    value = int(tx.meta.get("n") or "0")
    tx.meta.set("n", str(value + 1))


def test_without_the_gate_serializable_retries_keep_every_update(pg_url: str) -> None:
    """The gate is an optimization: SERIALIZABLE alone still loses nothing (it retries)."""
    stores = [Store(pg_url, writer_gate=False, max_retries=200) for _ in range(4)]
    stores[0].upgrade()
    threads = write_from_threads(stores, _increment, 15)
    assert stores[0].read(lambda tx: tx.meta.get("n")) == str(threads * 15)
    assert sum(st.retries for st in stores) > 0  # serialization failures happened and were retried
    for st in stores:
        st.dispose()


def test_the_gate_is_held_for_the_transaction_and_released_after(store: Store, pg_url: str) -> None:
    seen: list[int] = []

    def look(tx: Tx) -> None:
        with _raw(pg_url) as other:
            row = other.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                + _THIS_DB
                + " AND ((classid::bigint << 32) | objid::bigint) = %s",
                (WRITER_GATE,),
            ).fetchone()
            assert row is not None
            seen.append(int(row[0]))

    store.write(look)
    look_after: list[int] = []
    store.read(lambda tx: look_after.append(0))
    with _raw(pg_url) as other:
        row = other.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'" + _THIS_DB).fetchone()
    assert seen == [1] and row is not None and row[0] == 0


def test_a_dropped_connection_is_replaced(store: Store, pg_url: str) -> None:
    store.write(_increment)
    store.read(lambda tx: tx.meta.get("n"))
    with _raw(pg_url) as admin:  # the server restarts, a proxy drops idle sessions, ...
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    assert store.read(lambda tx: tx.meta.get("n")) == "1"
    store.write(_increment)
    with _raw(pg_url) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    store.write(_increment)
    assert store.read(lambda tx: tx.meta.get("n")) == "3"
