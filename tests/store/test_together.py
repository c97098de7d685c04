"""`Raw.together`: writes held and sent as one statement on PostgreSQL. On both back-ends the
effects are those of the same writes sent one by one, in the order of the calls: a read or
a SQLAlchemy statement inside the block sees what was held before it, a second write to
the same table sees the first, and a block that raises leaves nothing behind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import text

from studiolo.store import Store, Tx
from studiolo.store._raw import Raw

_PUT = "INSERT INTO meta (key, value) VALUES (:k, :v)"
_SET = "UPDATE meta SET value = :v WHERE key = :k"
_CHAIN = "INSERT INTO chains (chain, seq, hash, at) VALUES (:c, :s, :h, :a)"
_READ = "SELECT key, value FROM meta WHERE key LIKE 'held-%' ORDER BY key"


@pytest.fixture
def store(store_url: str, tmp_path: Path) -> Iterator[Store]:
    made = Store(store_url)
    made.upgrade()
    try:
        yield made
    finally:
        made.dispose()


class _Counted:
    """Counts the statements psycopg is given on any connection (PostgreSQL only)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sql: list[str] = []
        execute = psycopg.Cursor.execute

        def counted(cursor: Any, query: Any, *args: Any, **kw: Any) -> Any:
            self.sql.append(query.decode() if isinstance(query, bytes) else str(query))
            return execute(cursor, query, *args, **kw)

        monkeypatch.setattr(psycopg.Cursor, "execute", counted)

    def writes(self) -> list[str]:
        return [q for q in self.sql if q.lstrip().upper().startswith(("WITH", "INSERT", "UPDATE"))]


def _meta(store: Store) -> list[tuple[str, str]]:
    return store.read(lambda tx: [(str(k), str(v)) for k, v in Raw(tx.conn).all(_READ, {})])


def test_held_writes_go_as_one_statement(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    counted = _Counted(monkeypatch)

    def run(tx: Tx) -> None:
        raw = Raw(tx.conn)
        with tx.together():
            raw.send(_PUT, {"k": "held-a", "v": "1"})
            raw.send(_CHAIN, {"c": "held-chain", "s": 7, "h": "h", "a": 1.5})

    store.write(run)
    assert _meta(store) == [("held-a", "1")]
    head = "SELECT seq, hash FROM chains WHERE chain = 'held-chain'"
    chain = store.read(lambda tx: Raw(tx.conn).one(head, {}))
    assert chain is not None and tuple(chain) == (7, "h")
    if store.dialect == "postgresql":
        (combined,) = counted.writes()
        assert combined.startswith("WITH w0 AS (INSERT INTO meta") and "w1 AS (INSERT INTO chains" in combined


def test_order_of_effects_is_the_order_of_calls(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    counted = _Counted(monkeypatch)
    seen: dict[str, Any] = {}

    def run(tx: Tx) -> None:
        raw = Raw(tx.conn)
        with tx.together():
            raw.send(_PUT, {"k": "held-b", "v": "1"})
            raw.send(_SET, {"k": "held-b", "v": "2"})  # the same table: sees the row above
            seen["raw"] = [tuple(r) for r in raw.all(_READ, {})]  # a read sees what was held
            raw.send(_PUT, {"k": "held-c", "v": "3"})
            seen["sqlalchemy"] = [tuple(r) for r in tx.conn.execute(text(_READ))]
            raw.send(_SET, {"k": "held-c", "v": "4"})

    store.write(run)
    assert seen["raw"] == [("held-b", "2")]
    assert seen["sqlalchemy"] == [("held-b", "2"), ("held-c", "3")]
    assert _meta(store) == [("held-b", "2"), ("held-c", "4")]
    if store.dialect == "postgresql":
        assert len(counted.writes()) == 4  # each flushed by the next write to meta, or by a read


def test_a_block_that_raises_leaves_nothing(store: Store) -> None:
    def run(tx: Tx) -> None:
        with tx.together():
            Raw(tx.conn).send(_PUT, {"k": "held-d", "v": "1"})
            raise RuntimeError("the write changes its mind")

    with pytest.raises(RuntimeError):
        store.write(run)
    assert _meta(store) == []

    def after(tx: Tx) -> None:  # the connection is fit for the next write
        with tx.together():
            Raw(tx.conn).send(_PUT, {"k": "held-e", "v": "1"})

    store.write(after)
    assert _meta(store) == [("held-e", "1")]


def test_a_failing_held_write_fails_the_transaction(store: Store) -> None:
    chain = {"c": "held-chain-2", "s": 1, "h": "h", "a": 1.0}
    store.write(lambda tx: Raw(tx.conn).send(_CHAIN, chain))

    def run(tx: Tx) -> None:
        raw = Raw(tx.conn)
        with tx.together():
            raw.send(_PUT, {"k": "held-f", "v": "1"})
            raw.send(_CHAIN, chain)  # that chain exists: the merged statement fails as a whole

    with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
        store.write(run)
    assert _meta(store) == []


def test_only_writes_can_be_held(store: Store) -> None:
    def run(tx: Tx) -> None:
        with tx.together():
            Raw(tx.conn).send("SELECT 1", {})

    if store.dialect != "postgresql":
        store.write(run)  # SQLite holds nothing: every statement is sent as it comes
        return
    with pytest.raises(ValueError, match="not a write"):
        store.write(run)
