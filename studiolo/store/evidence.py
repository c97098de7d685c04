"""The evidence store: receipts. Only the verification path of the door writes here."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from studiolo.core.model import Receipt
from studiolo.store import schema as s
from studiolo.store._json import dumps, loads
from studiolo.store._raw import Raw, columns, in_list, in_params

__all__ = ["EvidenceRepo", "Gathered", "Pin"]

_RECEIPTS = f"SELECT {columns(s.receipts, 'r')} FROM receipts r WHERE r.id IN "
# Receipts about any candidate of one attempt with the same bytes and dependencies.
# The completion's evidence read (prepared SQL, see `_raw`): the cited receipts of the project
# and every receipt recorded for the candidate's bytes, each with its issuer's current key.
_WIDTH = len(s.receipts.c)
_GATHER_CITED = f"""
SELECT 1, {columns(s.receipts, "r")}, k.public_key FROM receipts r
  LEFT JOIN principals k ON k.id = r.issuer_id
 WHERE r.project_id = :p AND r.id IN """
_GATHER_RECORDED = f"""
SELECT 0, {columns(s.receipts, "r")}, k.public_key FROM candidates c
  JOIN receipts r ON r.candidate_id = c.id
  LEFT JOIN principals k ON k.id = r.issuer_id
 WHERE c.attempt_id = :a AND c.digest = :d AND c.dependency_digest = :dd"""
# Result positions (1-based): the flag, then the receipt's columns, then the issuer's key.
_COL = {name: 2 + i for i, name in enumerate(s.receipts.c.keys())}
_GATHER_ORDER = f" ORDER BY 1 DESC, {_COL['created_at']}, {_COL['id']}"
_INSERT_RECEIPT = (
    "INSERT INTO receipts (id, project_id, candidate_id, body, signature, issuer_id, reused_from,"
    " created_at, issuer_kid) VALUES (:id, :p, :cand, :body, :sig, :issuer, :src, :at, :kid)"
)
# Candidates of the tasks' current attempts that no verifier has answered yet (the metric
# `studiolo_verifier_queue_depth`): one count over the claimed tasks.
_PENDING = (
    "SELECT COUNT(*) FROM tasks t JOIN candidates c ON c.attempt_id = t.current_attempt_id"
    " WHERE t.status = 'claimed' AND NOT EXISTS (SELECT 1 FROM receipts r WHERE r.candidate_id = c.id)"
)
_RECEIPT = f"SELECT {columns(s.receipts, 'r')} FROM receipts r WHERE r.id = :id"
_RECEIPTS_OF_CANDIDATE = (
    f"SELECT {columns(s.receipts, 'r')} FROM receipts r WHERE r.candidate_id = :c ORDER BY r.created_at, r.id"
)
# Every receipt about the task's candidates: candidate by candidate (in their order), each
# candidate's receipts in theirs.
_RECEIPTS_OF_TASK = f"""
SELECT {columns(s.receipts, "r")} FROM candidates c JOIN receipts r ON r.candidate_id = c.id
 WHERE c.task_id = :t ORDER BY c.created_at, c.id, r.created_at, r.id"""


@dataclass(frozen=True)
class Pin:
    """What the ledger recorded when it verified a receipt's signature, and the key now."""

    kid: str | None  # the issuer's key id that verified it at ingest (None: recorded before pins)
    reused_from: str | None  # for a reuse link: the original receipt's id
    issuer_key: str | None  # the issuer's current public key (None: no key, or no issuer)


@dataclass(frozen=True)
class Gathered:
    cited: dict[str, Receipt]  # cited receipts that exist in the project
    recorded: tuple[Receipt, ...]  # every receipt recorded for the candidate's bytes
    pins: dict[str, Pin]  # by receipt id, for all of the above


class EvidenceRepo:
    def __init__(self, conn: Connection) -> None:
        self._raw = Raw(conn)

    def add_receipt(self, r: Receipt, at: float, issuer_kid: str, reused_from: str | None = None) -> None:
        """Record a receipt whose signature the caller verified with the key `issuer_kid`."""
        self._raw.run(
            _INSERT_RECEIPT,
            {
                "id": r.id,
                "p": r.project_id,
                "cand": r.candidate_id,
                "body": dumps(r.signed_body()),
                "sig": r.signature,
                "issuer": r.issuer_id,
                "src": reused_from,
                "at": at,
                "kid": issuer_kid,
            },
        )

    def gather(
        self, project_id: str, cited: Iterable[str], bytes_of: tuple[str, str, str] | None
    ) -> Gathered:
        """The cited receipts of the project and, for `bytes_of` = (attempt id, candidate
        digest, dependency digest), every receipt recorded for those bytes: one read."""
        return self.gather_later(project_id, cited, bytes_of)()

    def gather_later(
        self, project_id: str, cited: Iterable[str], bytes_of: tuple[str, str, str] | None
    ) -> Callable[[], Gathered]:
        """`gather(...)`, its read sent now and answered when called (`Raw.later`)."""
        ids = sorted(set(cited))
        parts = [_GATHER_CITED + in_list("r", len(ids))] if ids else []
        parts += [_GATHER_RECORDED] if bytes_of is not None else []
        if not parts:
            return lambda: Gathered({}, (), {})
        params: dict[str, Any] = {"p": project_id} | in_params("r", ids)
        if bytes_of is not None:
            params |= {"a": bytes_of[0], "d": bytes_of[1], "dd": bytes_of[2]}
        rows = self._raw.later(" UNION ALL ".join(parts) + _GATHER_ORDER, params)
        return lambda: _gathered(rows())

    def pending_candidates(self) -> int:
        """How many candidates of current attempts of claimed tasks have no receipt yet."""
        row = self._raw.one(_PENDING, {})
        return int(row[0]) if row else 0

    def receipt(self, receipt_id: str) -> Receipt | None:
        row = self._raw.one(_RECEIPT, {"id": receipt_id})
        return _receipt(row) if row else None

    def receipts(self, ids: Iterable[str]) -> dict[str, Receipt]:
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        rows = self._raw.all(_RECEIPTS + in_list("r", len(wanted)), in_params("r", wanted))
        return {r[0]: _receipt(r) for r in rows}

    def receipts_of_candidate(self, candidate_id: str) -> list[Receipt]:
        return [_receipt(r) for r in self._raw.all(_RECEIPTS_OF_CANDIDATE, {"c": candidate_id})]

    def receipts_of_task(self, task_id: str) -> list[Receipt]:
        """The receipts about each of the task's candidates, as `receipts_of_candidate` gives
        them, candidate after candidate (`ContentRepo.candidates_of_task`'s order): one read."""
        return self.receipts_of_task_later(task_id)()

    def receipts_of_task_later(self, task_id: str) -> Callable[[], list[Receipt]]:
        """`receipts_of_task(...)`, its read sent now and answered when called (`Raw.later`)."""
        return self._raw.later_as(_RECEIPTS_OF_TASK, {"t": task_id}, _receipt)


def _receipt(row: Sequence[Any]) -> Receipt:
    """A receipt from its columns in table order."""
    rid, project_id, candidate_id, body, signature, _issuer, reused_from = row[:7]
    return Receipt.from_signed(
        loads(body),
        signature,
        id=rid,
        project_id=project_id,
        candidate_id=candidate_id,
        reused=reused_from is not None,
    )


def _gathered(rows: Iterable[Sequence[Any]]) -> Gathered:
    found: dict[str, Receipt] = {}
    recorded: list[Receipt] = []
    pins: dict[str, Pin] = {}
    for row in rows:
        # Cited rows come first; a recorded row that was also cited is parsed once.
        receipt = (None if row[0] else found.get(row[1])) or _receipt(row[1 : 1 + _WIDTH])
        if row[0]:
            found[receipt.id] = receipt
        else:
            recorded.append(receipt)
        pins[receipt.id] = Pin(row[_COL["issuer_kid"] - 1], row[_COL["reused_from"] - 1], row[-1])
    return Gathered(found, tuple(recorded), pins)
