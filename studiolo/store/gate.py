"""Which audit chains a write transaction appends to, and so which writer gates it holds.

The audit log is one hash chain per project plus the *ledger chain* (`LEDGER_CHAIN`, the
events of no project). A write names the chains it will append to before it starts:
`Gate.project(p)`, or `Gate.whole_ledger()` for a write that may change what several projects
read (principals of no project, keys, revocations everywhere, garbage collection, restore).
A transaction that appends to a chain its gate does not cover is stopped before it commits
(`GateTooNarrow`) and run again with the chain added (`Store.write` does this), so a wrong
guess costs a retry, never a fork of a chain.

On PostgreSQL a chain gate is the session advisory lock `chain_key(chain)` taken after the
global gate `WRITER_GATE` in shared mode; the whole-ledger gate is `WRITER_GATE` in
exclusive mode (it waits for every chain writer in flight and holds new ones back).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

__all__ = ["LEDGER_CHAIN", "Gate", "GateTooNarrow", "chain_key", "chain_of"]

LEDGER_CHAIN = ""  # the chain of events that belong to no project ("" is never a project id)


def chain_of(project_id: str | None) -> str:
    return project_id or LEDGER_CHAIN


def chain_key(chain: str) -> int:
    """The chain's PostgreSQL advisory lock key: 63 bits of SHA-256 (a collision would only
    make two projects share a gate)."""
    digest = hashlib.sha256(b"studiolo-chain\0" + chain.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") >> 1


@dataclass(frozen=True)
class Gate:
    """`chains` is None for the whole ledger, else the chains the transaction may append to."""

    chains: frozenset[str] | None

    @staticmethod
    def whole_ledger() -> Gate:
        return Gate(None)

    @staticmethod
    def project(project_id: str | None) -> Gate:
        return Gate(frozenset({chain_of(project_id)}))

    @property
    def exclusive(self) -> bool:
        return self.chains is None

    def covers(self, chain: str) -> bool:
        return self.chains is None or chain in self.chains

    def widened(self, chain: str) -> Gate:
        return self if self.chains is None else Gate(self.chains | {chain})

    def ordered(self) -> list[str]:
        """The chains in the order their locks are taken (one order: no deadlock)."""
        return sorted(self.chains or ())


class GateTooNarrow(Exception):
    """A transaction appended to a chain its gate does not cover; rerun it with `gate`."""

    def __init__(self, gate: Gate) -> None:
        super().__init__(f"the write needs the gate of chains {gate.ordered()}")
        self.gate = gate
