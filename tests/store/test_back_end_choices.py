"""The choices that depend on the back-end are the store's, not the door's: the gate that
writes sharing one transaction take (SQLite: one writer, so the whole ledger)."""

from __future__ import annotations

from studiolo.store import Store
from studiolo.store.gate import Gate


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
