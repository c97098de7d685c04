"""A live run's trace, rebuilt from the project's audit log alone (the ledger's own order).

The oracle reads the same record shapes the in-process cells write. What the audit log does
not hold is said here: heartbeats are not events, so a lease is known from the claim and from
the deadline an accepted completion relied on (a refused completion's lease fact may be
stale: live runs do not measure eligible rejections); a refused completion's event names no
contract, fence or evidence; a read is placed at the write that made the revision declared.
Nothing here imports Studiolo: the events come in as plain mappings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["trace_from_audit"]

Record = dict[str, Any]


class _Builder:
    def __init__(self, start: float) -> None:
        self.start = start
        self.records: list[Record] = []
        self.made: dict[tuple[str, int], int] = {}  # (path, revision) → seq of the write that made it
        self.candidates: dict[str, Record] = {}
        self.contract: dict[str, str] = {}
        self.complete_grants: set[str] = set()

    def emit(self, kind: str, at: float, **fields: Any) -> Record:
        record = {"seq": len(self.records), "turn": 0, "t": round(at - self.start, 3), "kind": kind, **fields}
        self.records.append(record)
        return record

    def write(self, path: str, revision: int, at: float, by: str) -> None:
        self.made[(path, revision)] = self.emit("write", at, path=path, revision=revision, by=by)["seq"]

    def read_seq(self, path: str, revision: int) -> int:
        return self.made.get((path, revision), -1)  # revision 0 (never written): any write is later


def trace_from_audit(events: Iterable[Mapping[str, Any]], start: float, header: Record) -> list[Record]:
    """`events`: `seq`, `kind`, `actor`, `subject`, `data`, `at` of each, in any order."""
    b = _Builder(start)
    b.emit("header", start, **header)
    for e in sorted(events, key=lambda e: int(e["seq"])):
        _HANDLERS.get(str(e["kind"]), _ignore)(b, e, e["data"], float(e["at"]))
    return b.records


def _ignore(b: _Builder, e: Mapping[str, Any], d: Mapping[str, Any], at: float) -> None:
    return None


def _principal(b: _Builder, e: Mapping[str, Any], d: Mapping[str, Any], at: float) -> None:
    b.emit("principal", at, principal=e["subject"], name=d.get("name"), verifier=d.get("kind") == "verifier")


def _grant(b: _Builder, e: Mapping[str, Any], d: Mapping[str, Any], at: float) -> None:
    if "complete" in d.get("actions", ()):
        b.complete_grants.add(str(e["subject"]))
        b.emit("grant", at, principal=d["principal"], grant=e["subject"])


def _revoke(b: _Builder, e: Mapping[str, Any], d: Mapping[str, Any], at: float) -> None:
    if e["subject"] in b.complete_grants:
        b.emit("revoke", at, principal=d["principal"], grant=e["subject"])


def _task(b: _Builder, e: Mapping[str, Any], d: Mapping[str, Any], at: float) -> None:
    c = d["contract"]
    b.contract[str(e["subject"])] = d["contract_hash"]
    b.emit(
        "task", at, task=e["subject"], scope=c["scope"], criteria=c["criteria"], contract=d["contract_hash"]
    )


def _migrate(b: _Builder, e: Mapping[str, Any], d: Mapping[str, Any], at: float) -> None:
    b.contract[str(e["subject"])] = d["contract_hash"]
    b.emit("migrate", at, task=e["subject"], contract=d["contract_hash"])


def _attempt(b: _Builder, e: Mapping[str, Any], d: Mapping[str, Any], at: float) -> None:
    b.emit(
        "attempt",
        at,
        task=d["task"],
        attempt=e["subject"],
        principal=d["principal"],
        fence=d["fence"],
        deadline=round(d["lease_deadline"] - b.start, 3),
    )


def _imported(b: _Builder, e: Mapping[str, Any], d: Mapping[str, Any], at: float) -> None:
    for path, revision in sorted(d.get("revisions", {}).items()):
        b.write(path, int(revision), at, "import")


def _edited(b: _Builder, e: Mapping[str, Any], d: Mapping[str, Any], at: float) -> None:
    b.write(str(e["subject"]), int(d["revision"]), at, "edit")


def _candidate(b: _Builder, e: Mapping[str, Any], d: Mapping[str, Any], at: float) -> None:
    record = b.emit(
        "candidate",
        at,
        candidate=e["subject"],
        task=d["task"],
        attempt=d["attempt"],
        digest=d["digest"],
        dependency_digest=d["dependency_digest"],
        files=d["files"],
        bases=d["bases"],
        reads={p: [r, b.read_seq(p, int(r))] for p, r in d.get("file_deps", {}).items()},
        # a collection's revision is the ledger's own count: placed at the submission, so a
        # change under it after the submission is stale, one before it is not seen
        collections={p: [r, len(b.records)] for p, r in d.get("collection_deps", {}).items()},
        base_seqs={p: b.read_seq(p, int(r)) for p, r in d["bases"].items()},
    )
    b.candidates[str(e["subject"])] = record


def _receipt(b: _Builder, e: Mapping[str, Any], d: Mapping[str, Any], at: float) -> None:
    cand = b.candidates.get(str(d["candidate"]))
    if cand is None:
        return
    b.emit(
        "receipt",
        at,
        receipt=e["subject"],
        issuer=e["actor"],
        task=d["task"],
        attempt=d["attempt"],
        candidate=d["candidate"],
        candidate_digest=cand["digest"],
        dependency_digest=cand["dependency_digest"],
        contract=b.contract.get(str(d["task"])),
        criterion=d["criterion"],
        checker=d["checker"],
        result=d["result"],
    )


def _accepted(b: _Builder, e: Mapping[str, Any], d: Mapping[str, Any], at: float) -> None:
    b.emit("heartbeat", at, attempt=d["attempt"], deadline=round(d["lease_deadline"] - b.start, 3))
    b.emit(
        "decision",
        at,
        caller=e["actor"],
        task=e["subject"],
        index=None,
        attempt=d["attempt"],
        fence=d["fence"],
        contract=d["contract_hash"],
        candidate=d["candidate"],
        evidence=list(d["evidence"]),
        accepted=True,
        failed=[],
        request=d["request_id"],
    )
    for path, revision in sorted(d.get("revisions", {}).items()):
        b.write(path, int(revision), at, "completion")


def _rejected(b: _Builder, e: Mapping[str, Any], d: Mapping[str, Any], at: float) -> None:
    b.emit(
        "decision",
        at,
        caller=e["actor"],
        task=e["subject"],
        index=None,
        attempt=d.get("attempt"),
        fence=-1,
        contract="",
        candidate=d.get("candidate"),
        evidence=[],
        accepted=False,
        failed=list(d.get("failed", [])),
        request=d.get("request_id"),
    )


_HANDLERS = {
    "principal.added": _principal,
    "grant.created": _grant,
    "grant.revoked": _revoke,
    "task.created": _task,
    "task.migrated": _migrate,
    "attempt.claimed": _attempt,
    "attempt.reassigned": _attempt,
    "artifacts.imported": _imported,
    "artifact.edited": _edited,
    "candidate.submitted": _candidate,
    "receipt.recorded": _receipt,
    "completion.accepted": _accepted,
    "completion.rejected": _rejected,
}
