"""The choices that depend on the back-end are the store's, not the door's: a read sent ahead
of the writer gate (PostgreSQL only: SQLite has no round trips to save) and the gate that
writes sharing one transaction take (SQLite: one writer, so the whole ledger)."""

from __future__ import annotations

from studiolo.store import Store
from studiolo.store._raw import Bare
from studiolo.store.gate import Gate


def test_a_read_ahead_runs_only_where_it_saves_round_trips(store_url: str) -> None:
    store = Store(store_url)
    try:
        calls: list[bool] = []

        def read(bare: Bare) -> int:
            calls.append(True)
            row = bare.one("SELECT :n", {"n": 1})
            assert row is not None
            return int(row[0])

        found = store.read_ahead(read)
        if store.dialect == "sqlite":
            assert found is None and calls == []
        else:
            assert found == 1 and calls == [True]
    finally:
        store.dispose()


def test_the_gate_of_batched_writes(store_url: str) -> None:
    store = Store(store_url)
    try:
        asked: list[str] = []

        def gate_of() -> Gate:
            asked.append("asked")
            return Gate.project("prj_x")

        gate = store.batch_gate(gate_of)
        if store.dialect == "sqlite":
            assert gate == Gate.whole_ledger() and asked == []
        else:
            assert gate == Gate.project("prj_x") and asked == ["asked"]
    finally:
        store.dispose()
