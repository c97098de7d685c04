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
  increasing fences, and the task's fence is its newest attempt's.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [str(ROOT), *(p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench")]

from tests.scale.checker import Findings, check_run, load_rows  # noqa: E402

__all__ = ["check", "check_rows", "read_answers"]


def read_answers(logs: Path) -> list[dict[str, Any]]:
    """Every answer line of every client log (the `stats` lines are skipped)."""
    out: list[dict[str, Any]] = []
    for path in sorted(logs.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                rec = json.loads(line)
                if rec.get("type") != "stats":
                    out.append(rec)
    return out


def check(url: str, logs: Path) -> Findings:
    return check_rows(load_rows(url), read_answers(logs))


def check_rows(rows: dict[str, list[dict[str, Any]]], answers: list[dict[str, Any]]) -> Findings:
    found = check_run(rows, answers)
    _accepted_once(rows, answers, found)
    _requests_once(rows, found)
    _fences_forward(rows, found)
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
            }
        )
    )
    return 1 if found.problems else 0


if __name__ == "__main__":
    sys.exit(main())
