"""An independent checker of the audit log: it replays the events into its own small state
and re-derives, for every accepted completion, each condition of the completion contract
at its commit point. It shares no code with `studiolo.core.predicate`.

Lease extensions are not events: a completion's event records the lease deadline it relied
on. The checker holds it to the commit time, to what the attempt could have had (the claim's
deadline, or one a heartbeat set before the commit), and, given the attempts table, to the
attempt's final row (a completed attempt's lease never moves again).

An event whose detail retention redacted (`data` is `{"~redacted": ...}`) has nothing left
to replay and is passed over: on such a log, a completion whose earlier events were redacted
may be reported for want of them (the chain itself is checked by tests/scale/checker.py)."""

from __future__ import annotations

import fnmatch
import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import create_engine, select

from studiolo.store import schema


@dataclass
class _Att:
    task: str
    owner: str
    fence: int
    deadline: float
    incarnation_ok: bool = True


@dataclass
class _State:
    attempts: dict[str, _Att] = field(default_factory=dict)
    current: dict[str, str | None] = field(default_factory=dict)  # task → attempt
    fences: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    status: dict[str, str] = field(default_factory=dict)
    criteria: dict[str, dict[str, str]] = field(default_factory=dict)
    scope: dict[str, list[str]] = field(default_factory=dict)
    contract: dict[str, str] = field(default_factory=dict)
    grants: dict[str, dict[str, Any]] = field(default_factory=dict)
    revs: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    dirs: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    cands: dict[str, dict[str, Any]] = field(default_factory=dict)
    receipts: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: dict[str, str] = field(default_factory=dict)
    claimed_at: dict[str, float] = field(default_factory=dict)  # attempt → its claim's time
    deadlines: dict[str, float] | None = None  # attempt → lease_deadline in the attempts table


def _glob(pattern: str, path: str) -> bool:
    pat, segs = pattern.split("/"), path.split("/")

    def go(i: int, j: int) -> bool:
        if i == len(pat):
            return j == len(segs)
        if pat[i] == "**":
            return any(go(i + 1, k) for k in range(j, len(segs) + 1))
        return j < len(segs) and fnmatch.fnmatchcase(segs[j], pat[i]) and go(i + 1, j + 1)

    return go(0, 0)


def load_events(url: str) -> list[dict[str, Any]]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(select(schema.events).order_by(schema.events.c.seq)).all()
    engine.dispose()
    return [{**r._mapping, "data": json.loads(r.data)} for r in rows]


def load_deadlines(url: str) -> dict[str, float]:
    """attempt id → the lease deadline its row holds now."""
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(select(schema.attempts.c.id, schema.attempts.c.lease_deadline)).all()
    engine.dispose()
    return {r.id: float(r.lease_deadline) for r in rows}


def check(events: list[dict[str, Any]], deadlines: dict[str, float] | None = None) -> list[str]:
    """Every violation found (empty: the log shows no completion that broke the contract).
    `deadlines` (attempt → its row's lease deadline) adds the cross-check with the table."""
    st, problems = _State(deadlines=deadlines), []
    for e in events:
        handler = _HANDLERS.get(e["kind"])
        data = e["data"]
        if isinstance(data, dict) and len(data) == 1 and "~redacted" in data:
            continue  # its detail aged out (retention): nothing of it is left to replay
        if handler is not None:
            problems.extend(handler(st, e))
    return problems


def _task_created(st: _State, e: dict[str, Any]) -> list[str]:
    c = e["data"]["contract"]
    st.status[e["subject"]] = "open"
    st.criteria[e["subject"]], st.scope[e["subject"]] = c["criteria"], c["scope"]
    st.contract[e["subject"]] = e["data"]["contract_hash"]
    st.current[e["subject"]] = None
    return []


def _task_migrated(st: _State, e: dict[str, Any]) -> list[str]:
    c = e["data"]["contract"]
    st.criteria[e["subject"]], st.scope[e["subject"]] = c["criteria"], c["scope"]
    st.contract[e["subject"]] = e["data"]["contract_hash"]
    return []


def _attempt_started(st: _State, e: dict[str, Any]) -> list[str]:
    d, out = e["data"], []
    if d["fence"] <= st.fences[d["task"]]:
        out.append(f"fence did not increase on {d['task']}: {d['fence']}")
    st.fences[d["task"]] = d["fence"]
    st.attempts[e["subject"]] = _Att(d["task"], d["principal"], d["fence"], d["lease_deadline"])
    st.claimed_at[e["subject"]] = e["at"]
    st.current[d["task"]] = e["subject"]
    st.status[d["task"]] = "claimed"
    return out


_MIN_LEASE = 1.0  # the shortest lease a claim or a heartbeat may ask for (SPEC, docs/api.md)


def _lease_problems(st: _State, e: dict[str, Any], att: _Att | None) -> list[str]:
    """The recorded deadline: live at the commit, one the attempt could have had, and (given
    the attempts table) the one its row holds."""
    relied = e["data"].get("lease_deadline")
    if att is None or not isinstance(relied, int | float):
        return ["lease deadline not recorded"]
    out = []
    if e["at"] >= relied:
        out.append("lease was not live")
    claimed = st.claimed_at[e["data"]["attempt"]]
    if relied != att.deadline and relied < claimed + _MIN_LEASE:
        out.append(f"lease deadline {relied!r} was never granted")
    row = None if st.deadlines is None else st.deadlines.get(e["data"]["attempt"])
    if st.deadlines is not None and row != relied:
        out.append(f"lease deadline {relied!r} differs from the attempt's row {row!r}")
    return out


def _released(st: _State, e: dict[str, Any]) -> list[str]:
    task = st.attempts[e["subject"]].task
    st.current[task], st.status[task] = None, "open"
    return []


def _cancelled(st: _State, e: dict[str, Any]) -> list[str]:
    st.status[e["subject"]] = "cancelled"
    return []


def _grant(st: _State, e: dict[str, Any]) -> list[str]:
    d = e["data"]
    st.grants[e["subject"]] = {
        "principal": d["principal"],
        "actions": set(d["actions"]),
        "scope": d["scope"],
        "live": True,
    }
    return []


def _revoke(st: _State, e: dict[str, Any]) -> list[str]:
    st.grants[e["subject"]]["live"] = False
    return []


def _bump(st: _State, project: str, path: str, revision: int) -> None:
    st.revs[f"{project}:{path}"] = revision
    parts = path.split("/")[:-1]
    for prefix in [""] + ["/".join(parts[: i + 1]) + "/" for i in range(len(parts))]:
        st.dirs[f"{project}:{prefix}"] += 1


def _edited(st: _State, e: dict[str, Any]) -> list[str]:
    _bump(st, e["project_id"], e["subject"], e["data"]["revision"])
    return []


def _imported(st: _State, e: dict[str, Any]) -> list[str]:
    for path, revision in e["data"]["revisions"].items():
        _bump(st, e["project_id"], path, revision)
    return []


def _candidate(st: _State, e: dict[str, Any]) -> list[str]:
    st.cands[e["subject"]] = e["data"]
    return []


def _receipt(st: _State, e: dict[str, Any]) -> list[str]:
    st.receipts[e["subject"]] = {**e["data"], "issuer": e["actor"]}
    return []


def _allowed(st: _State, who: str, action: str, path: str | None) -> bool:
    return any(
        g["live"]
        and g["principal"] == who
        and (action in g["actions"] or "admin" in g["actions"])
        and (path is None or any(_glob(p, path) for p in g["scope"]))
        for g in st.grants.values()
    )


def _completion(st: _State, e: dict[str, Any]) -> list[str]:
    d, task, who, p = e["data"], e["subject"], e["actor"], e["project_id"]
    cand, att = st.cands.get(d["candidate"], {}), st.attempts.get(d["attempt"])
    bad = []
    if st.status.get(task) not in ("open", "claimed"):
        bad.append("task was not active")
    if att is None or att.owner != who:
        bad.append("caller did not own the attempt")
    if st.current.get(task) != d["attempt"] or att is None or att.fence != d["fence"]:
        bad.append("attempt was not current")
    bad.extend(_lease_problems(st, e, att))
    if cand.get("attempt") != d["attempt"]:
        bad.append("candidate not bound")
    for path in cand.get("files", {}):
        if not any(_glob(s, path) for s in st.scope[task]):
            bad.append(f"{path} outside scope")
        if not (_allowed(st, who, "write", path) and _allowed(st, who, "complete", path)):
            bad.append(f"not authorized for {path}")
    for path, rev in {**cand.get("file_deps", {}), **cand.get("bases", {})}.items():
        if st.revs[f"{p}:{path}"] != rev:
            bad.append(f"{path} moved from {rev}")
    for prefix, rev in cand.get("collection_deps", {}).items():
        if st.dirs[f"{p}:{prefix}"] != rev:
            bad.append(f"{prefix} moved from {rev}")
    passed = set()
    for rid in d["evidence"]:
        r = st.receipts.get(rid)
        if r is None or r.get("attempt") != d["attempt"]:
            bad.append(f"receipt {rid} unknown or unbound")
            continue
        rc = st.cands[r["candidate"]]
        if (rc["digest"], rc["dependency_digest"]) != (cand.get("digest"), cand.get("dependency_digest")):
            bad.append(f"receipt {rid} for other bytes")
        if r["result"] == "pass" and st.criteria[task].get(r["criterion"]) == r["checker"]:
            passed.add(r["criterion"])
        elif r["result"] != "pass":
            bad.append(f"receipt {rid} failed")
    if set(st.criteria[task]) - passed:
        bad.append("criteria not covered")
    st.status[task] = "completed"
    for path, rev in d["revisions"].items():
        _bump(st, p, path, rev)
    key = f"{p}:{d['request_id']}"
    if key in st.requests:
        bad.append("request id accepted twice")
    st.requests[key] = task
    return [f"completion of {task} at seq {e['seq']}: {b}" for b in bad]


_HANDLERS = {
    "task.created": _task_created,
    "task.migrated": _task_migrated,
    "task.cancelled": _cancelled,
    "attempt.claimed": _attempt_started,
    "attempt.reassigned": _attempt_started,
    "attempt.released": _released,
    "grant.created": _grant,
    "grant.revoked": _revoke,
    "artifact.edited": _edited,
    "artifacts.imported": _imported,
    "bytes.deleted": _imported,  # deleting bytes on request deletes the current paths that held them
    "candidate.submitted": _candidate,
    "receipt.recorded": _receipt,
    "completion.accepted": _completion,
}
