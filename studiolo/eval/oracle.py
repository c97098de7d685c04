"""The independent oracle: eligibility of every completion decision, from the trace alone.

It imports nothing of Studiolo (a test checks): no predicate, no door, no store.  It folds the
trace's records up to each decision into its own facts — which attempt is current and its
lease deadline, whether the caller's work grant stands, the task's current contract, which
paths were written after the agent read them, which receipts the verifier issued and what
they bind — and calls the decision eligible when every fact holds.  The trace records what
the door answered (revisions, deadlines, receipts); the oracle never asks the door anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Label", "label_decisions"]

Record = dict[str, Any]


@dataclass(frozen=True)
class Label:
    seq: int
    eligible: bool
    violated: tuple[str, ...]  # the facts that did not hold (empty when eligible)


@dataclass
class _Facts:
    verifiers: set[str] = field(default_factory=set)
    authorized: dict[str, bool] = field(default_factory=dict)
    tasks: dict[str, Record] = field(default_factory=dict)
    contract: dict[str, str] = field(default_factory=dict)
    completed: set[str] = field(default_factory=set)
    current: dict[str, Record] = field(default_factory=dict)  # task → its current attempt
    deadline: dict[str, float] = field(default_factory=dict)  # attempt → lease deadline
    writes: list[tuple[int, str]] = field(default_factory=list)  # (seq, path)
    candidates: dict[str, Record] = field(default_factory=dict)
    receipts: dict[str, Record] = field(default_factory=dict)


def label_decisions(records: list[Record]) -> dict[int, Label]:
    """Every decision's label, by the decision record's `seq`."""
    facts = _Facts()
    out: dict[int, Label] = {}
    for r in records:
        kind = r["kind"]
        if kind == "decision":
            violated = _violations(facts, r)
            out[r["seq"]] = Label(r["seq"], not violated, violated)
            if r["accepted"]:
                facts.completed.add(r["task"])
        else:
            _fold(facts, r)
    return out


def _fold(f: _Facts, r: Record) -> None:
    kind = r["kind"]
    if kind == "principal" and r.get("verifier"):
        f.verifiers.add(r["principal"])
    elif kind == "grant":
        f.authorized[r["principal"]] = True
    elif kind == "revoke":
        f.authorized[r["principal"]] = False
    elif kind == "task":
        f.tasks[r["task"]] = r
        f.contract[r["task"]] = r["contract"]
    elif kind == "migrate":
        f.contract[r["task"]] = r["contract"]
    elif kind == "attempt":
        f.current[r["task"]] = r
        f.deadline[r["attempt"]] = r["deadline"]
    elif kind == "heartbeat":
        f.deadline[r["attempt"]] = r["deadline"]
    elif kind == "write":
        f.writes.append((r["seq"], r["path"]))
    elif kind == "candidate":
        f.candidates[r["candidate"]] = r
    elif kind == "receipt":
        f.receipts[r["receipt"]] = r


def _violations(f: _Facts, d: Record) -> tuple[str, ...]:
    out: list[str] = []
    task, cand = f.tasks[d["task"]], f.candidates.get(d["candidate"])
    if d["task"] in f.completed:
        out.append("task-not-active")
    cur = f.current.get(d["task"])
    if cur is None or (cur["attempt"], cur["principal"], cur["fence"]) != (
        d["attempt"],
        d["caller"],
        d["fence"],
    ):
        out.append("obsolete-attempt")
    if not d["t"] < f.deadline.get(d["attempt"], float("-inf")):
        out.append("lease-expired")
    if not f.authorized.get(d["caller"], False):
        out.append("revoked")
    if d["contract"] != f.contract[d["task"]]:
        out.append("contract")
    if cand is None or cand["task"] != d["task"] or cand["attempt"] != d["attempt"]:
        return (*out, "candidate-not-bound")
    if not set(cand["files"]) <= set(task["scope"]):
        out.append("out-of-scope")
    if any(_written_after(f, path, seq) for path, (_rev, seq) in cand["reads"].items()):
        out.append("stale-read")
    if any(_written_under_after(f, prefix, seq) for prefix, (_rev, seq) in cand["collections"].items()):
        out.append("stale-read")
    if any(_written_after(f, path, seq) for path, seq in cand["base_seqs"].items()):
        out.append("stale-base")
    out.extend(_evidence(f, d, task, cand))
    return tuple(dict.fromkeys(out))


def _written_after(f: _Facts, path: str, seq: int) -> bool:
    return any(s > seq and p == path for s, p in f.writes)


def _written_under_after(f: _Facts, prefix: str, seq: int) -> bool:
    return any(s > seq and p.startswith(prefix) for s, p in f.writes)


def _evidence(f: _Facts, d: Record, task: Record, cand: Record) -> list[str]:
    contract = f.contract[d["task"]]
    binding = (d["task"], d["attempt"], contract, cand["digest"], cand["dependency_digest"])

    def bound(r: Record) -> bool:
        key = (r["task"], r["attempt"], r["contract"], r["candidate_digest"], r["dependency_digest"])
        return key == binding and r["issuer"] in f.verifiers

    out = []
    cited = [f.receipts.get(name) for name in d["evidence"]]
    if any(r is None or not bound(r) for r in cited):
        out.append("evidence-other-bytes")
    for criterion, checker in task["criteria"].items():
        ok = [
            r
            for r in cited
            if r is not None and bound(r) and r["criterion"] == criterion and r["checker"] == checker
        ]
        if not any(r["result"] == "pass" for r in ok):
            out.append("evidence-missing")
        if any(
            bound(r) and r["criterion"] == criterion and r["result"] == "fail" for r in f.receipts.values()
        ):
            out.append("evidence-failed")
    return out
