"""Tasks, attempts, completions and handoffs."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from studiolo.core.model import (
    Attempt,
    AttemptStatus,
    Candidate,
    Completion,
    Contract,
    Handoff,
    Task,
    TaskStatus,
)
from studiolo.store import schema as s
from studiolo.store._json import dumps, loads
from studiolo.store._raw import Bare, Raw, columns, in_list, in_params
from studiolo.store.content import candidate_of

__all__ = ["LIVE_ATTEMPT_SQL", "Subjects", "WorkRepo", "task_and_candidate"]

# The completion's statements (prepared SQL, see `_raw`).
_WIDTHS = (len(s.tasks.c), len(s.attempts.c), len(s.candidates.c), len(s.completions.c))
# The task, the named attempt if it is the task's, the named candidate if it is in the task's
# project, and the completion already made under this request id in the project: one read.
# On PostgreSQL the prior completion is a LATERAL subquery (`OFFSET 0`: not flattened), so
# it is found on its whole unique key; as a plain join, a generic plan cached while the table
# was new and small scanned the project's completions for the request id (see `_raw._keyed`).
_SUBJECTS = f"""
SELECT {columns(s.tasks, "t")}, {columns(s.attempts, "a")}, {columns(s.candidates, "c")},
       {columns(s.completions, "p")}
  FROM tasks t
  LEFT JOIN attempts a ON a.id = :a AND a.task_id = t.id
  LEFT JOIN candidates c ON c.id = :c AND c.project_id = t.project_id
  LEFT JOIN %s
 WHERE t.id = :t
"""
# A task and a candidate of its project, read before the completion takes the gate.
_TASK_AND_CANDIDATE = f"""
SELECT {columns(s.tasks, "t")}, {columns(s.candidates, "c")}
  FROM tasks t LEFT JOIN candidates c ON c.id = :c AND c.project_id = t.project_id
 WHERE t.id = :t
"""
_SUBJECTS_SQLITE = _SUBJECTS % "completions p ON p.project_id = t.project_id AND p.request_id = :r"
_SUBJECTS_PG = _SUBJECTS % (
    "LATERAL (SELECT * FROM completions p WHERE p.project_id = t.project_id"
    " AND p.request_id = :r OFFSET 0) p ON true"
)
_INSERT_COMPLETION_SQL = (
    "INSERT INTO completions (id, project_id, task_id, attempt_id, candidate_id, request_id,"
    " request_digest, principal_id, commit_version, receipt, signature, created_at) VALUES"
    " (:id, :p, :task, :attempt, :cand, :req, :digest, :who, :version, :body, :sig, :at)"
)
# Heartbeats (prepared SQL): the attempts and their tasks in one read, and the conditional
# move of a lease (only a live attempt of its owner and of this incarnation moves).
_ATTEMPTS_AND_TASKS = f"""
SELECT {columns(s.attempts, "a")}, {columns(s.tasks, "t")}
  FROM attempts a JOIN tasks t ON t.id = a.task_id
 WHERE a.id """  # then `= :id`, or `IN (...)`
# `core.lease.is_live` in SQL (tests/store/test_liveness.py checks that the two agree).
LIVE_ATTEMPT_SQL = (
    f"status = '{AttemptStatus.ACTIVE.value}' AND incarnation = :incarnation AND lease_deadline > :now"
)
_EXTEND_LEASE = (
    "UPDATE attempts SET lease_deadline = :deadline WHERE id = :id AND principal_id = :owner"
    f" AND {LIVE_ATTEMPT_SQL}"
)
_FINISH_ATTEMPT = "UPDATE attempts SET status = :s WHERE id = :id"
# The reads and writes of the other operations of an agent's cycle (prepared SQL as well).
_TASK_SQL = f"SELECT {columns(s.tasks, 't')} FROM tasks t WHERE t.id = :id"
_ATTEMPT_SQL = f"SELECT {columns(s.attempts, 'a')} FROM attempts a WHERE a.id = :id"
_ATTEMPTS_OF_TASK = f"SELECT {columns(s.attempts, 'a')} FROM attempts a WHERE a.task_id = :t ORDER BY a.fence"
_COMPLETION_OF_TASK = f"SELECT {columns(s.completions, 'p')} FROM completions p WHERE p.task_id = :t"
# An attempt with its task; a candidate with its task: one read each.
_CANDIDATE_AND_TASK = f"""
SELECT {columns(s.candidates, "c")}, {columns(s.tasks, "t")}
  FROM candidates c JOIN tasks t ON t.id = c.task_id
 WHERE c.id = :id"""
_INSERT_ATTEMPT = (
    "INSERT INTO attempts (id, task_id, principal_id, fence, lease_deadline, incarnation, status, created_at)"
    " VALUES (:id, :task, :who, :fence, :deadline, :inc, :status, :at)"
)
_TASK_COLUMNS = frozenset(s.tasks.c.keys()) - {"id"}
_HELD_BY = f"""
SELECT {columns(s.attempts, "a")} FROM tasks t JOIN attempts a ON a.id = t.current_attempt_id
 WHERE t.project_id = :p AND t.status = :s AND a.principal_id = :who
 ORDER BY t.created_at, t.id LIMIT :n"""
_ATTEMPT_COLUMNS = frozenset(s.attempts.c.keys()) - {"id"}
_FINISH_TASK = "UPDATE tasks SET status = :s, completed_at = :at WHERE id = :id"
# The other reads and writes (plain SQL text as well).
_TASKS = f"SELECT {columns(s.tasks, 't')} FROM tasks t WHERE t.project_id = :p"
_INSERT_TASK = (
    f"INSERT INTO tasks ({', '.join(c.name for c in s.tasks.c)})"
    f" VALUES ({', '.join(':' + c.name for c in s.tasks.c)})"
)
_INSERT_HANDOFF = (
    "INSERT INTO handoffs (id, task_id, attempt_id, principal_id, body, created_at)"
    " VALUES (:id, :task, :attempt, :who, :body, :at)"
)
_LATEST_HANDOFF = (
    f"SELECT {columns(s.handoffs, 'h')} FROM handoffs h WHERE h.task_id = :t"
    " ORDER BY h.created_at DESC, h.id DESC LIMIT 1"
)


@dataclass(frozen=True)
class Subjects:
    """What a completion request names, as the ledger has it (see `WorkRepo.subjects`)."""

    task: Task
    attempt: Attempt | None  # None: missing, or another task's
    candidate: Candidate | None  # None: missing, or another project's
    prior: Completion | None  # the project's completion under this request id


class WorkRepo:
    def __init__(self, conn: Connection) -> None:
        self._raw = Raw(conn)

    # the completion transaction
    def subjects(self, task_id: str, attempt_id: str, candidate_id: str, request_id: str) -> Subjects | None:
        """Task, attempt, candidate and any prior completion of the request id: one read."""
        return self.subjects_later(task_id, attempt_id, candidate_id, request_id)()

    def subjects_later(
        self, task_id: str, attempt_id: str, candidate_id: str, request_id: str
    ) -> Callable[[], Subjects | None]:
        """`subjects(...)`, its read sent now and answered when called (`Raw.later`)."""
        sql = _SUBJECTS_PG if self._raw.pg else _SUBJECTS_SQLITE
        rows = self._raw.later(sql, {"t": task_id, "a": attempt_id, "c": candidate_id, "r": request_id})

        def subjects() -> Subjects | None:
            found = rows()
            if not found:
                return None
            row = found[0]
            t, a, c, _ = _WIDTHS
            attempt, cand, prior = row[t : t + a], row[t + a : t + a + c], row[t + a + c :]
            return Subjects(
                task=_task(row[:t]),
                attempt=_attempt(attempt) if attempt[0] is not None else None,
                candidate=candidate_of(cand) if cand[0] is not None else None,
                prior=_completion(prior) if prior[0] is not None else None,
            )

        return subjects

    def finish(self, project_id: str, c: Completion) -> None:
        """Record the completion and close its attempt and task (status `completed`)."""
        self._raw.send(
            _INSERT_COMPLETION_SQL,
            {
                "id": c.id,
                "p": project_id,
                "task": c.task_id,
                "attempt": c.attempt_id,
                "cand": c.candidate_id,
                "req": c.request_id,
                "digest": c.request_digest,
                "who": c.principal_id,
                "version": c.commit_version,
                "body": dumps(dict(c.receipt)),
                "sig": c.signature,
                "at": c.created_at,
            },
        )
        self._raw.send(_FINISH_ATTEMPT, {"s": AttemptStatus.COMPLETED.value, "id": c.attempt_id})
        self._raw.send(_FINISH_TASK, {"s": TaskStatus.COMPLETED.value, "at": c.created_at, "id": c.task_id})

    # tasks
    def add_task(self, t: Task) -> None:
        values = {
            "id": t.id,
            "project_id": t.project_id,
            "title": t.title,
            "description": t.description,
            "contract": dumps(t.contract.to_json()),
            "contract_hash": t.contract_hash,
            "status": t.status.value,
            "current_attempt_id": t.current_attempt_id,
            "fence": t.fence,
            "created_at": t.created_at,
            "completed_at": t.completed_at,
        }
        self._raw.run(_INSERT_TASK, values)

    def task(self, task_id: str) -> Task | None:
        row = self._raw.one(_TASK_SQL, {"id": task_id})
        return _task(row) if row else None

    def task_later(self, task_id: str) -> Callable[[], list[Task]]:
        """`task(...)` (none or one), its read sent now and answered when called (`Raw.later`)."""
        return self._raw.later_as(_TASK_SQL, {"id": task_id}, _task)

    def attempt_and_task(self, attempt_id: str) -> tuple[Attempt, Task] | None:
        """An attempt and its task, in one read (None: no such attempt)."""
        row = self._raw.one(_ATTEMPTS_AND_TASKS + "= :id", {"id": attempt_id})
        return _attempt_and_task(row) if row is not None else None

    def candidate_and_task(self, candidate_id: str) -> tuple[Candidate, Task] | None:
        """A candidate and its task, in one read (None: no such candidate)."""
        row = self._raw.one(_CANDIDATE_AND_TASK, {"id": candidate_id})
        if row is None:
            return None
        c = _WIDTHS[2]
        return candidate_of(row[:c]), _task(row[c:])

    def tasks(
        self, project_id: str, status: TaskStatus | None = None, limit: int = 500, offset: int = 0
    ) -> list[Task]:
        params: dict[str, Any] = {"p": project_id, "limit": limit, "offset": offset}
        where = ""
        if status is not None:
            where, params["s"] = " AND t.status = :s", status.value
        sql = _TASKS + where + " ORDER BY t.created_at, t.id LIMIT :limit OFFSET :offset"
        return [_task(r) for r in self._raw.all(sql, params)]

    def policy_pins(self, project_id: str) -> dict[int, list[str]]:
        """Policy version → ids of the project's tasks whose contract pins it (the dashboard)."""
        pins: dict[int, list[str]] = {}
        sql = "SELECT id, contract FROM tasks WHERE project_id = :p ORDER BY created_at, id"
        for task_id, contract in self._raw.all(sql, {"p": project_id}):
            pins.setdefault(int(loads(contract)["policy_version"]), []).append(task_id)
        return pins

    def count_by_status(self, project_id: str) -> dict[str, int]:
        """Status → how many of the project's tasks have it (the dashboard's Projects page)."""
        sql = "SELECT status, count(*) FROM tasks WHERE project_id = :p GROUP BY status"
        return {str(st): int(n) for st, n in self._raw.all(sql, {"p": project_id})}

    def count_tasks(self, project_id: str | None = None) -> int:
        if project_id is None:
            row = self._raw.one("SELECT count(*) FROM tasks", {})
        else:
            row = self._raw.one("SELECT count(*) FROM tasks WHERE project_id = :p", {"p": project_id})
        assert row is not None  # a count is one row
        return int(row[0])

    def update_task(self, task_id: str, **values: Any) -> None:
        if "status" in values and isinstance(values["status"], TaskStatus):
            values["status"] = values["status"].value
        if "contract" in values and isinstance(values["contract"], Contract):
            values["contract"] = dumps(values["contract"].to_json())
        self._raw.run(_update_sql("tasks", _TASK_COLUMNS, tuple(values)), {**values, "_id": task_id})

    # attempts
    def add_attempt(self, a: Attempt) -> None:
        self._raw.run(
            _INSERT_ATTEMPT,
            {
                "id": a.id,
                "task": a.task_id,
                "who": a.principal_id,
                "fence": a.fence,
                "deadline": a.lease_deadline,
                "inc": a.incarnation,
                "status": a.status.value,
                "at": a.created_at,
            },
        )

    def attempt(self, attempt_id: str) -> Attempt | None:
        row = self._raw.one(_ATTEMPT_SQL, {"id": attempt_id})
        return _attempt(row) if row else None

    def held_by(self, project_id: str, principal_id: str, limit: int = 1000) -> list[Attempt]:
        """The current attempts of the project's claimed tasks that `principal_id` holds, in
        the tasks' order: one read."""
        params = {"p": project_id, "s": TaskStatus.CLAIMED.value, "who": principal_id, "n": limit}
        return [_attempt(r) for r in self._raw.all(_HELD_BY, params)]

    def attempts(self, task_id: str) -> list[Attempt]:
        return self.attempts_later(task_id)()

    def attempts_later(self, task_id: str) -> Callable[[], list[Attempt]]:
        """`attempts(...)`, its read sent now and answered when called (`Raw.later`)."""
        return self._raw.later_as(_ATTEMPTS_OF_TASK, {"t": task_id}, _attempt)

    def update_attempt(self, attempt_id: str, **values: Any) -> None:
        if "status" in values and isinstance(values["status"], AttemptStatus):
            values["status"] = values["status"].value
        self._raw.run(_update_sql("attempts", _ATTEMPT_COLUMNS, tuple(values)), {**values, "_id": attempt_id})

    def leases(self, attempt_ids: Sequence[str]) -> dict[str, tuple[Attempt, Task]]:
        """The named attempts that exist, each with its task: one read (heartbeats)."""
        ids = sorted(set(attempt_ids))
        if not ids:
            return {}
        rows = self._raw.all(_ATTEMPTS_AND_TASKS + "IN " + in_list("i", len(ids)), in_params("i", ids))
        return {row[0]: _attempt_and_task(row) for row in rows}

    def extend_lease(self, a: Attempt, now: float, deadline: float) -> bool:
        """Move a live attempt's lease deadline; False (nothing written) unless the attempt is
        still active, its owner's, of this incarnation and unexpired at `now`."""
        params = {
            "id": a.id,
            "owner": a.principal_id,
            "incarnation": a.incarnation,
            "now": now,
            "deadline": deadline,
        }
        return self._raw.run(_EXTEND_LEASE, params) == 1

    def completion_of_task(self, task_id: str) -> Completion | None:
        found = self.completion_of_task_later(task_id)()
        return found[0] if found else None

    def completions_of_tasks(self, task_ids: Iterable[str]) -> dict[str, Completion | None]:
        """`completion_of_task` of each task, the reads sent together (`Raw.later`)."""
        sent = {t: self.completion_of_task_later(t) for t in task_ids}
        return {t: next(iter(found()), None) for t, found in sent.items()}

    def completion_of_task_later(self, task_id: str) -> Callable[[], list[Completion]]:
        """`completion_of_task(...)` (none or one), sent now and answered when called (`Raw.later`)."""
        return self._raw.later_as(_COMPLETION_OF_TASK, {"t": task_id}, _completion)

    def completions(self, project_id: str) -> list[Completion]:
        sql = f"SELECT {columns(s.completions, 'p')} FROM completions p WHERE p.project_id = :p"
        return [_completion(r) for r in self._raw.all(sql + " ORDER BY p.commit_version", {"p": project_id})]

    # handoffs
    def add_handoff(self, h: Handoff) -> None:
        body = {
            "contract_hash": h.contract_hash,
            "artifacts": dict(h.artifacts),
            "obligations": list(h.obligations),
            "notes": h.notes,
        }
        values = {
            "id": h.id,
            "task": h.task_id,
            "attempt": h.attempt_id,
            "who": h.principal_id,
            "body": dumps(body),
            "at": h.created_at,
        }
        self._raw.run(_INSERT_HANDOFF, values)

    def latest_handoff(self, task_id: str) -> Handoff | None:
        row = self._raw.one(_LATEST_HANDOFF, {"t": task_id})
        if row is None:
            return None
        handoff_id, task, attempt_id, principal_id, text, created_at = row
        body = loads(text)
        return Handoff(
            id=handoff_id,
            task_id=task,
            attempt_id=attempt_id,
            principal_id=principal_id,
            contract_hash=body["contract_hash"],
            artifacts=body["artifacts"],
            obligations=tuple(body["obligations"]),
            notes=body["notes"],
            created_at=created_at,
        )


@functools.lru_cache(maxsize=256)
def _update_sql(table: str, allowed: frozenset[str], names: tuple[str, ...]) -> str:
    """`UPDATE table SET c = :c, ... WHERE id = :_id` for these columns (names come from code,
    checked against the table all the same)."""
    unknown = set(names) - allowed
    if unknown or not names:
        raise ValueError(f"not updatable columns of {table}: {sorted(unknown) or 'none given'}")
    return f"UPDATE {table} SET " + ", ".join(f"{n} = :{n}" for n in names) + " WHERE id = :_id"


def task_and_candidate(bare: Bare, task_id: str, candidate_id: str) -> tuple[Task, Candidate | None] | None:
    """The task and the candidate (if it is in the task's project), read outside any
    transaction (`Store.glance`): one statement, one snapshot."""
    row = bare.one(_TASK_AND_CANDIDATE, {"t": task_id, "c": candidate_id})
    if row is None:
        return None
    width = _WIDTHS[0]
    return _task(row[:width]), candidate_of(row[width:]) if row[width] is not None else None


def _task(row: Sequence[Any]) -> Task:
    """A task from its columns in table order."""
    tid, project_id, title, description, contract, contract_hash, status, current, fence, at, done = row
    return Task(
        id=tid,
        project_id=project_id,
        title=title,
        description=description,
        contract=_contract_of(contract),
        contract_hash=contract_hash,
        status=TaskStatus(status),
        current_attempt_id=current,
        fence=int(fence),
        created_at=at,
        completed_at=done,
    )


@functools.lru_cache(maxsize=4096)
def _contract_of(text: str) -> Contract:
    """A task's contract from its column, parsed once per text: every operation on a task
    reads it, a Contract is immutable, and the text is all it depends on."""
    return Contract.from_json(loads(text))


def _attempt_and_task(row: Sequence[Any]) -> tuple[Attempt, Task]:
    """An attempt's columns, then its task's (`_ATTEMPTS_AND_TASKS`)."""
    a = _WIDTHS[1]
    return _attempt(row[:a]), _task(row[a:])


def _attempt(row: Sequence[Any]) -> Attempt:
    aid, task_id, principal_id, fence, lease_deadline, incarnation, status, created_at = row
    return Attempt(
        id=aid,
        task_id=task_id,
        principal_id=principal_id,
        fence=int(fence),
        lease_deadline=lease_deadline,
        incarnation=incarnation,
        status=AttemptStatus(status),
        created_at=created_at,
    )


def _completion(row: Sequence[Any]) -> Completion:
    cid, _project, task_id, attempt_id, cand_id, request_id, digest, who, version, body, sig, at = row
    receipt = loads(body)
    return Completion(
        id=cid,
        task_id=task_id,
        attempt_id=attempt_id,
        candidate_id=cand_id,
        request_id=request_id,
        request_digest=digest,
        principal_id=who,
        commit_version=int(version),
        receipt=receipt,
        signature=sig,
        created_at=at,
        revisions=receipt.get("revisions", {}),
    )
