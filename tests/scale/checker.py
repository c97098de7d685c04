"""The scale tests' independent checker. It reads the ledger's rows and the clients' logs and
imports nothing from `studiolo` (no predicate, no hashing helpers): what it knows of the
formats it re-derives from their documentation (SPEC §1 events, §2 completion contract).

`tests.auditcheck.check` replays the audit log and re-evaluates every accepted completion's
predicates at its commit point; this module adds what a multi-replica run must also show:
the chain recomputes, fences strictly increase per task, at most one completion per task,
the contract hash and the verifier admission held at the commit, every answer a client got
is the recorded one (identical replays returned the original receipt), and every recorded
completion is whole (no partial commit)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import rfc8785
from sqlalchemy import create_engine, text

from tests.auditcheck import check as replay_predicates

__all__ = ["Findings", "check_run", "load_rows"]

_GENESIS = "sha256:" + "0" * 64


@dataclass
class Findings:
    problems: list[str] = field(default_factory=list)
    accepted: int = 0
    rejected: int = 0
    events: int = 0

    def add(self, problem: str) -> None:
        if len(self.problems) < 50:
            self.problems.append(problem)


def load_rows(url: str) -> dict[str, list[dict[str, Any]]]:
    """The tables the checker reads, as plain dicts (raw SQL: no studiolo schema objects)."""
    engine = create_engine(url)
    out: dict[str, list[dict[str, Any]]] = {}
    queries = {
        "events": "SELECT * FROM events ORDER BY seq",
        "completions": "SELECT * FROM completions",
        "tasks": "SELECT * FROM tasks",
        "attempts": "SELECT * FROM attempts",
        "artifact_revisions": "SELECT * FROM artifact_revisions",
        "chains": "SELECT * FROM chains",
        "meta": "SELECT * FROM meta WHERE key IN ('chain_split', 'detail_split')",
    }
    with engine.connect() as conn:
        for name, sql in queries.items():
            out[name] = [dict(r._mapping) for r in conn.execute(text(sql))]
    engine.dispose()
    for e in out["events"]:
        e["data"] = json.loads(e["data"])
    return out


def check_run(rows: dict[str, list[dict[str, Any]]], answers: list[dict[str, Any]]) -> Findings:
    found = Findings(events=len(rows["events"]))
    events = rows["events"]
    deadlines = {a["id"]: float(a["lease_deadline"]) for a in rows["attempts"]}
    for problem in replay_predicates(events, deadlines):
        found.add(problem)
    meta = {m["key"]: int(m["value"]) for m in rows["meta"]}
    heads = {c["chain"]: (c["seq"], c["hash"]) for c in rows["chains"]}
    _chain(events, meta.get("chain_split", 0), heads, found, meta.get("detail_split", 2**62))
    _fences(events, found)
    _contract_and_admission(events, found)
    _one_per_task(rows, found)
    _whole(rows, found)
    _answers(rows, answers, found)
    return found


def _sha(value: Any) -> str:
    return "sha256:" + hashlib.sha256(rfc8785.dumps(value)).hexdigest()


def _event_hash(prev: str, e: dict[str, Any], detail_split: int) -> str | None:
    """The hash `e` must have (docs/concepts.md, "The audit chain"); None if it cannot be
    right. Up to `detail_split` the hash covers the whole `data`; after it, the header and
    the digest of the canonical `data` (`format: 2`), and a `data` of one key `~redacted` is
    a redaction marker carrying that digest (and who, when, why)."""
    header = {k: e[k] for k in ("seq", "project_id", "kind", "actor", "subject")}
    header["at"] = repr(float(e["at"]))
    data = e["data"]
    marker = data.get("~redacted") if isinstance(data, dict) and len(data) == 1 else None
    if e["seq"] <= detail_split:
        old = _sha({"prev": prev, "event": {**header, "data": data}})
        if marker is not None or old == e["hash"]:
            return None if marker is not None else old
    if marker is not None:
        fields = isinstance(marker, dict) and all(
            isinstance(marker.get(k), str) for k in ("digest", "by", "reason")
        )
        if not fields or isinstance(marker.get("at"), bool) or not isinstance(marker.get("at"), int | float):
            return None
        detail = marker["digest"]
    else:
        detail = _sha(data)
    return _sha({"prev": prev, "event": {**header, "detail": detail, "format": 2}})


def _chain(
    events: list[dict[str, Any]],
    split: int,
    heads: dict[str, tuple[int, str]],
    found: Findings,
    detail_split: int = 2**62,
) -> None:
    """Up to `split` one global chain (seq 1, 2, ...); after it, each event links to the previous
    event of its project ("" for events of no project), and each chain ends at its head row.
    Each hash recomputes by its rule (`_event_hash`)."""
    whole, last = _GENESIS, {}
    for n, e in enumerate(events, start=1):
        chain = e["project_id"] or ""
        prev = whole if e["seq"] <= split else last.get(chain, (0, _GENESIS))[1]
        digest = _event_hash(prev, e, detail_split)
        if (e["seq"] <= split and e["seq"] != n) or e["prev_hash"] != prev or e["hash"] != digest:
            found.add(f"audit chain broken at seq {e['seq']}")
            return
        whole = e["hash"] if e["seq"] <= split else whole
        last[chain] = (e["seq"], e["hash"])
    if heads != last:
        found.add(f"chain heads {sorted(heads.items())[:3]} are not the chains' last events")


def _fences(events: list[dict[str, Any]], found: Findings) -> None:
    last: dict[str, int] = defaultdict(int)
    for e in events:
        if e["kind"] in ("attempt.claimed", "attempt.reassigned"):
            task, fence = e["data"]["task"], e["data"]["fence"]
            if fence <= last[task]:
                found.add(f"fence {fence} on {task} does not exceed {last[task]}")
            last[task] = fence


def _contract_and_admission(events: list[dict[str, Any]], found: Findings) -> None:
    contract: dict[str, str] = {}
    verifiers: dict[str, set[str]] = {}
    receipts: dict[str, dict[str, Any]] = {}
    for e in events:
        kind, d = e["kind"], e["data"]
        if kind in ("task.created", "task.migrated"):
            contract[e["subject"]] = d["contract_hash"]
        elif kind == "checker.admitted":
            verifiers[e["subject"]] = set(d["verifiers"])
        elif kind == "receipt.recorded":
            receipts[e["subject"]] = {**d, "issuer": e["actor"]}
        elif kind == "completion.accepted":
            found.accepted += 1
            if d.get("contract_hash", contract.get(e["subject"])) != contract.get(e["subject"]):
                found.add(f"completion of {e['subject']} under a contract that was not pinned")
            for rid in d["evidence"]:
                r = receipts.get(rid, {})
                if r.get("issuer") not in verifiers.get(r.get("checker", ""), set()):
                    found.add(f"completion of {e['subject']} cites {rid} from a verifier not admitted")
        elif kind == "completion.rejected":
            found.rejected += 1


def _one_per_task(rows: dict[str, list[dict[str, Any]]], found: Findings) -> None:
    per_task = Counter(e["subject"] for e in rows["events"] if e["kind"] == "completion.accepted")
    for task, n in per_task.items():
        if n > 1:
            found.add(f"{task} was completed {n} times")
    if sorted(per_task) != sorted(c["task_id"] for c in rows["completions"]):
        found.add("completion rows and completion.accepted events disagree")


def _whole(rows: dict[str, list[dict[str, Any]]], found: Findings) -> None:
    """Every recorded completion carries all of its effects; nothing completed without one."""
    tasks = {t["id"]: t for t in rows["tasks"]}
    attempts = {a["id"]: a for a in rows["attempts"]}
    by_cause = defaultdict(dict)
    for r in rows["artifact_revisions"]:
        by_cause[r["cause"]][r["path"]] = int(r["revision"])
    done = set()
    for c in rows["completions"]:
        done.add(c["task_id"])
        receipt = json.loads(c["receipt"])
        task, att = tasks.get(c["task_id"]), attempts.get(c["attempt_id"])
        if task is None or task["status"] != "completed" or task["completed_at"] is None:
            found.add(f"completion {c['id']} without a completed task")
        if att is None or att["status"] != "completed":
            found.add(f"completion {c['id']} without a completed attempt")
        if by_cause.get(c["id"], {}) != receipt["revisions"]:
            found.add(f"completion {c['id']} published {by_cause.get(c['id'])}, not {receipt['revisions']}")
    for t in rows["tasks"]:
        if t["status"] == "completed" and t["id"] not in done:
            found.add(f"{t['id']} is completed without a completion record")
    causes = {r["cause"] for r in rows["artifact_revisions"]} - {"edit"}
    if not causes <= {c["id"] for c in rows["completions"]}:
        found.add("artifact revisions published by a completion that is not recorded")


def _answers(rows: dict[str, list[dict[str, Any]]], answers: list[dict[str, Any]], found: Findings) -> None:
    """What clients were told is what the ledger holds; every replay gave the original."""
    recorded = {c["request_id"]: c for c in rows["completions"]}
    told: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for a in answers:
        if a["outcome"] in ("accepted", "replay"):
            told[a["rid"]].add((a["completion"], a["signature"]))
    for rid, versions in told.items():
        c = recorded.get(rid)
        if c is None:
            found.add(f"{rid} was answered with a completion the ledger does not hold")
        elif versions != {(c["id"], c["signature"])}:
            found.add(f"{rid} got {len(versions)} different answers")
    first = Counter(a["rid"] for a in answers if a["outcome"] == "accepted")
    for rid, n in first.items():
        if n > 1:
            found.add(f"{rid} was accepted (not replayed) {n} times")
