"""The soak's independent checker: the ledger's tables, read with plain SQL, against the
answers the clients logged (the `*.jsonl` files `bench/soak.py` keeps). It never calls the
door and imports nothing from `studiolo.service` (a test holds it to that).

    python bench/soakcheck.py --url URL --logs DIR      # exit 1 and the problems if any

It runs the scale tests' checker (tests/scale/checker.py: predicates re-evaluated from the
audit history at each commit point, chains recomputed, fences per task from the events,
answers against completion rows, whole completions) and adds what a soak under faults must
also show from the tables themselves, without trusting the database's constraints:

- every completion a client was told was accepted is in `completions` exactly once (by its
  id, its task and its request id), with the signature the client got;
- no request id was applied twice: one completion row and one `completion.accepted` event
  per (project, request id);
- fences never went backwards: per task, attempts in creation order carry strictly
  increasing fences, and the task's fence is its newest attempt's;
- every other answer that told a client something succeeded is in the tables: a claim's or
  a heartbeat's attempt (with that task and fence), a candidate, a receipt, a blob;
- a kill aimed at an open completion (`kills.jsonl`): what its client saw (no answer from
  the killed replica, then the same request id elsewhere) and that it was applied at most
  once, and once if the client was told it was;
- every event-stream reader saw its project's events in order, with no gap and no
  duplicate, up to the last one it saw (across its reconnections).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [str(ROOT), *(p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench")]

from sqlalchemy import create_engine, text  # noqa: E402

from tests.scale.checker import Findings, check_run  # noqa: E402
from tests.scale.checker import load_rows as _scale_rows  # noqa: E402

__all__ = ["SoakFindings", "check", "check_rows", "load_rows", "read_answers", "read_records"]

_NOT_ANSWERS = ("stats", "cpu", "kill")


@dataclass
class SoakFindings(Findings):
    kills: dict[str, int] = field(default_factory=dict)  # aimed kills, by what the client saw
    streams: dict[str, Any] = field(default_factory=dict)  # per reader: events seen, reconnections
    answers: dict[str, int] = field(default_factory=dict)  # answers held to the ledger, by op


def read_records(logs: Path, kind: str | None = None) -> list[dict[str, Any]]:
    """Every line of every `*.jsonl` in `logs`, in file order (those of `type` `kind`, if given)."""
    out: list[dict[str, Any]] = []
    for path in sorted(logs.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                rec = json.loads(line)
                if kind is None or rec.get("type") == kind:
                    out.append(rec)
    return out


def read_answers(logs: Path) -> list[dict[str, Any]]:
    """Every answer line of every client log (stats, CPU and kill lines are skipped)."""
    return [r for r in read_records(logs) if r.get("type") not in _NOT_ANSWERS]


def load_rows(url: str) -> dict[str, list[dict[str, Any]]]:
    """The scale checker's tables, and the ids of candidates, receipts and blobs."""
    rows = _scale_rows(url)
    engine = create_engine(url)
    with engine.connect() as conn:
        for table, column in (("candidates", "id"), ("receipts", "id"), ("blobs", "digest")):
            rows[table] = [{column: r[0]} for r in conn.execute(text(f"SELECT {column} FROM {table}"))]
    engine.dispose()
    return rows


def check(url: str, logs: Path) -> SoakFindings:
    return check_rows(load_rows(url), read_answers(logs), read_records(logs, "kill"))


def check_rows(
    rows: dict[str, list[dict[str, Any]]],
    answers: list[dict[str, Any]],
    kills: list[dict[str, Any]] | None = None,
) -> SoakFindings:
    completions = [a for a in answers if a.get("op", "complete") == "complete"]
    base = check_run(rows, completions)
    found = SoakFindings(base.problems, base.accepted, base.rejected, base.events)
    _accepted_once(rows, completions, found)
    _requests_once(rows, found)
    _fences_forward(rows, found)
    _answers_held(rows, answers, found)
    _aimed_kills(rows, completions, kills or [], found)
    _streams(rows, answers, found)
    return found


def _accepted_once(
    rows: dict[str, list[dict[str, Any]]], answers: list[dict[str, Any]], found: Findings
) -> None:
    by_id = Counter(c["id"] for c in rows["completions"])
    per_task = Counter(c["task_id"] for c in rows["completions"])
    signature = {c["id"]: c["signature"] for c in rows["completions"]}
    task_of = {c["id"]: c["task_id"] for c in rows["completions"]}
    for task, n in per_task.items():
        if n > 1:
            found.add(f"task {task} has {n} completion rows")
    seen: set[str] = set()
    for a in answers:
        if a.get("outcome") not in ("accepted", "replay") or a["completion"] in seen:
            continue
        seen.add(a["completion"])
        cid = a["completion"]
        if by_id[cid] != 1:
            found.add(f"accepted completion {cid} is in the ledger {by_id[cid]} times")
        elif signature[cid] != a["signature"] or task_of[cid] != a.get("task", task_of[cid]):
            found.add(f"accepted completion {cid} differs from what its client was told")


def _requests_once(rows: dict[str, list[dict[str, Any]]], found: Findings) -> None:
    by_row = Counter((c["project_id"], c["request_id"]) for c in rows["completions"])
    by_event = Counter(
        (e["project_id"], e["data"].get("request_id"))
        for e in rows["events"]
        if e["kind"] == "completion.accepted"
    )
    for key in sorted(set(by_row) | set(by_event), key=str):
        rows_n, events_n = by_row[key], by_event[key]
        if rows_n > 1 or events_n > 1:
            found.add(f"request id {key[1]} in {key[0]} was applied twice: {rows_n} rows, {events_n} events")


def _fences_forward(rows: dict[str, list[dict[str, Any]]], found: Findings) -> None:
    per_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for a in rows["attempts"]:
        per_task[a["task_id"]].append(a)
    tasks = {t["id"]: t for t in rows["tasks"]}
    for task, attempts in per_task.items():
        attempts.sort(key=lambda a: (float(a["created_at"]), int(a["fence"])))
        fences = [int(a["fence"]) for a in attempts]
        for before, after in itertools.pairwise(fences):
            if after <= before:
                found.add(f"fence went backwards on {task}: {before} then {after}")
                break
        if task in tasks and int(tasks[task]["fence"]) < max(fences):
            found.add(f"task {task}'s fence {tasks[task]['fence']} is below its attempts' {max(fences)}")


def _answers_held(
    rows: dict[str, list[dict[str, Any]]], answers: list[dict[str, Any]], found: SoakFindings
) -> None:
    """Nothing a client was told succeeded is missing: attempts, candidates, receipts, blobs."""
    attempts = {a["id"]: (a["task_id"], int(a["fence"])) for a in rows["attempts"]}
    held = {
        "candidate": ("candidate", {c["id"] for c in rows.get("candidates", [])}),
        "receipt": ("receipt", {r["id"] for r in rows.get("receipts", [])}),
        "blob": ("digest", {b["digest"] for b in rows.get("blobs", [])}),
    }
    checked: Counter[str] = Counter()
    for a in answers:
        op = a.get("op")
        if a.get("outcome") != "ok" or op is None:
            continue
        if op in ("claim", "heartbeat", "reassign", "read_attempt"):
            got = attempts.get(a["attempt"])
            if got != (a["task"], int(a["fence"])):
                found.add(
                    f"{op} answered attempt {a['attempt']} (fence {a['fence']}) the ledger has as {got}"
                )
        elif op in held:
            key, ids = held[op]
            if ids and a[key] not in ids:  # (no table read: an older ledger reader, skip)
                found.add(f"{op} answered {a[key]}, which the ledger does not hold")
        checked[op] += 1
    found.answers = dict(sorted(checked.items()))


def _aimed_kills(
    rows: dict[str, list[dict[str, Any]]], completions: list[dict[str, Any]], kills: list[dict[str, Any]],
    found: SoakFindings,
) -> None:  # fmt: skip
    """Per kill aimed at an open completion: what its client saw, and exactly-once in the ledger."""
    by_rid: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for a in completions:
        if "rid" in a:
            by_rid[a["rid"]].append(a)
    applied = Counter(c["request_id"] for c in rows["completions"])
    seen: Counter[str] = Counter(aimed=0, not_aimed=0)
    for k in kills:
        rid = k.get("rid")
        if rid is None:
            seen["not_aimed"] += 1
            continue
        seen["aimed"] += 1
        tries = sorted(by_rid.get(rid, []), key=lambda a: a["at"])
        cut = any(a["outcome"] == "no_answer" and a["r"] == k["replica"] for a in tries)
        final = next((a["outcome"] for a in tries if a["outcome"] != "no_answer"), "never_answered")
        if cut:
            seen["cut_then_" + final] += 1  # no answer from the killed replica, then this elsewhere
        else:
            seen["answered_before_kill_" + final] += 1
        if applied[rid] > 1:
            found.add(f"request {rid} (killed in flight) was applied {applied[rid]} times")
        if final in ("accepted", "replay") and applied[rid] != 1:
            found.add(
                f"request {rid} (killed in flight) was told accepted and is applied {applied[rid]} times"
            )
    found.kills = dict(sorted(seen.items()))


def _streams(
    rows: dict[str, list[dict[str, Any]]], answers: list[dict[str, Any]], found: SoakFindings
) -> None:
    """Each reader's events, joined across its reconnections: in order, no gap, no duplicate."""
    per: dict[int, list[int]] = defaultdict(list)
    breaks: Counter[int] = Counter()
    for a in answers:
        if a.get("op") == "stream":
            per[a["k"]].extend(a.get("seqs", []))
            breaks[a["k"]] += a["outcome"] == "broken"
    if not per:
        return
    projects = {e["project_id"] for e in rows["events"] if e["project_id"]}
    for k, seqs in sorted(per.items()):
        mine = [e["seq"] for e in rows["events"] if e["project_id"] in projects]
        last = seqs[-1] if seqs else 0
        expected = [s for s in mine if s <= last]
        if seqs != expected:
            missing = sorted(set(expected) - set(seqs))[:5]
            dup = [s for s, n in Counter(seqs).items() if n > 1][:5]
            backwards = sum(1 for a, b in itertools.pairwise(seqs) if b <= a)
            found.add(f"reader {k}: {len(seqs)} events seen, {len(expected)} expected; missing {missing}, "
                      f"duplicated {dup}, {backwards} out of order")  # fmt: skip
        found.streams[str(k)] = {
            "events": len(seqs),
            "behind_at_end": len(mine) - len(expected),
            "breaks": breaks[k],
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", required=True, help="the ledger's SQLAlchemy URL")
    parser.add_argument("--logs", type=Path, required=True, help="the directory of the clients' *.jsonl")
    args = parser.parse_args(argv)
    found = check(args.url, args.logs)
    print(
        json.dumps(
            {
                "problems": found.problems,
                "accepted": found.accepted,
                "rejected": found.rejected,
                "events": found.events,
                "kills": found.kills,
                "streams": found.streams,
                "answers": found.answers,
            }
        )
    )
    return 1 if found.problems else 0


if __name__ == "__main__":
    sys.exit(main())
