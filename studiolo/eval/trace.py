"""The trace of one cell: JSONL records, ids the ledger made renamed to ordinals.

Every record has `seq`, `turn`, `t` (seconds of the authority's clock since the cell began)
and `kind`; wall-clock measurements live under the record's `timing` key and nothing else
does, so two runs of one cell give the same trace once `timing` is dropped
(`comparable`).  The ledger's ids (tasks, attempts, candidates, receipts, grants) appear as
`task-1`, `attempt-3`, ... in order of first appearance: a receipt id covers a verifier log
that holds the suite's own timing, so raw ids would differ between runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

__all__ = ["Trace", "comparable", "dump_lines", "read_trace"]

_KINDS = {
    "tsk": "task",
    "att": "attempt",
    "cnd": "candidate",
    "rcp": "receipt",
    "grt": "grant",
    "prn": "principal",
}


class Trace:
    def __init__(self, clock: Callable[[], float]) -> None:
        self.records: list[dict[str, Any]] = []
        self.turn = 0
        self._clock = clock
        self._start = clock()
        self._names: dict[str, str] = {}
        self._counts: dict[str, int] = {}

    def name(self, ident: str) -> str:
        """The ordinal name of a ledger id (the same id always gets the same name)."""
        found = self._names.get(ident)
        if found is None:
            kind = _KINDS.get(ident.split("_", 1)[0], "id")
            self._counts[kind] = self._counts.get(kind, 0) + 1
            found = self._names[ident] = f"{kind}-{self._counts[kind]}"
        return found

    def names(self, idents: Iterable[str]) -> list[str]:
        return [self.name(i) for i in idents]

    def emit(self, kind: str, /, **fields: Any) -> dict[str, Any]:
        record: dict[str, Any] = {
            "seq": len(self.records),
            "turn": self.turn,
            "t": round(self._clock() - self._start, 3),
        }
        record["kind"] = kind
        record.update(fields)
        self.records.append(record)
        return record

    def now(self) -> float:
        return round(self._clock() - self._start, 3)


def comparable(record: dict[str, Any]) -> dict[str, Any]:
    """A record without its wall-clock measurements."""
    return {k: v for k, v in record.items() if k != "timing"}


def dump_lines(records: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n" for r in records)


def read_trace(path: Path) -> list[dict[str, Any]]:
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"{path}:{n}: not JSON: {exc}") from exc
        if not isinstance(record, dict):
            raise ValueError(f"{path}:{n}: a trace line is a JSON object")
        out.append(record)
    return out
