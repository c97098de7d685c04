"""The evidence store: receipts. Only the verification path of the door writes here."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, Row, bindparam, insert, select

from studiolo.core.model import Receipt, ReceiptResult
from studiolo.store import schema as s
from studiolo.store._json import dumps, loads

__all__ = ["EvidenceRepo"]

_RECEIPTS = select(s.receipts).where(s.receipts.c.id.in_(bindparam("ids", expanding=True)))
# Receipts about any candidate of one attempt with the same bytes and dependencies.
_FOR_BYTES = (
    select(s.receipts)
    .join(s.candidates, s.candidates.c.id == s.receipts.c.candidate_id)
    .where(
        s.candidates.c.attempt_id == bindparam("a"),
        s.candidates.c.digest == bindparam("d"),
        s.candidates.c.dependency_digest == bindparam("dd"),
    )
    .order_by(s.receipts.c.created_at, s.receipts.c.id)
)


class EvidenceRepo:
    def __init__(self, conn: Connection) -> None:
        self._c = conn

    def add_receipt(self, r: Receipt, at: float, reused_from: str | None = None) -> None:
        self._c.execute(
            insert(s.receipts).values(
                id=r.id,
                project_id=r.project_id,
                candidate_id=r.candidate_id,
                body=dumps(r.signed_body()),
                signature=r.signature,
                issuer_id=r.issuer_id,
                reused_from=reused_from,
                created_at=at,
            )
        )

    def receipt(self, receipt_id: str) -> Receipt | None:
        row = self._c.execute(select(s.receipts).where(s.receipts.c.id == receipt_id)).first()
        return _receipt(row) if row else None

    def receipts(self, ids: Iterable[str]) -> dict[str, Receipt]:
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        rows = self._c.execute(_RECEIPTS, {"ids": wanted})
        return {r.id: _receipt(r) for r in rows}

    def receipts_of_candidate(self, candidate_id: str) -> list[Receipt]:
        rows = self._c.execute(
            select(s.receipts)
            .where(s.receipts.c.candidate_id == candidate_id)
            .order_by(s.receipts.c.created_at, s.receipts.c.id)
        )
        return [_receipt(r) for r in rows]

    def receipts_for_bytes(self, attempt_id: str, digest: str, dependency_digest: str) -> list[Receipt]:
        """Every receipt recorded for a candidate of `attempt_id` with exactly these bytes."""
        rows = self._c.execute(_FOR_BYTES, {"a": attempt_id, "d": digest, "dd": dependency_digest})
        return [_receipt(r) for r in rows]


def _receipt(row: Row[Any]) -> Receipt:
    b = loads(row.body)
    return Receipt(
        id=row.id,
        project_id=row.project_id,
        task_id=b["task_id"],
        attempt_id=b["attempt_id"],
        candidate_id=row.candidate_id,
        contract_hash=b["contract_hash"],
        candidate_digest=b["candidate_digest"],
        dependency_digest=b["dependency_digest"],
        criterion=b["criterion"],
        checker=b["checker"],
        result=ReceiptResult(b["result"]),
        issued_at=int(b["issued_at"]),
        issuer_id=b["issuer"],
        log_digest=b["log_digest"],
        signature=row.signature,
        reused=row.reused_from is not None,
    )
