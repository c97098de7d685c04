"""Every statement that names its rows finds them through an index (SQLite).

A read by owner without an index costs the whole table: a task view read every candidate and
receipt of the ledger to find its task's few, so an agent's task view cost more with every
completion anywhere (found in `bench/fleet.py`: a server's CPU per agent grew with the
ledger). This test runs the service's usual traffic through the HTTP app, records every
statement SQLite ran (with its parameters bound, from the connection's trace callback), and
asks SQLite for each one's plan: a statement with a `WHERE` must not scan a ledger table. A
statement without one (every project, garbage collection's sweep) reads the whole table by
design and is not checked.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from studiolo import CompletionRejected
from studiolo.client import Client
from studiolo.store import schema
from tests.faces.helpers import complete, in_process, new_task, submit, verify
from tests.world import World, build_world

_TABLES = set(schema.metadata.tables)
_FROM = re.compile(r"\b(?:FROM|JOIN)\s+(\w+)(?:\s+(?:AS\s+)?(\w+))?", re.IGNORECASE)
_SCAN = re.compile(r"^SCAN (\w+)")
_CHECKED = re.compile(r"\s*(?:SELECT|WITH|UPDATE|DELETE|INSERT)\b", re.IGNORECASE)


@pytest.fixture
def traced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[World, list[str]]]:
    """A world whose SQLite connections report each statement they run (bound)."""
    statements: list[str] = []
    real: Callable[..., sqlite3.Connection] = sqlite3.connect

    def connect(*args: Any, **kw: Any) -> sqlite3.Connection:
        conn = real(*args, **kw)
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(sqlite3, "connect", connect)
    monkeypatch.setattr(sqlite3.dbapi2, "connect", connect)
    world = build_world(tmp_path)
    statements.clear()  # the migrations and the world's set-up are not the traffic
    yield world, statements
    world.coord.store.dispose()


def _traffic(world: World) -> None:
    """The fleet's cycle and the reads around it, through the HTTP app and the client."""
    with in_process(world) as actors:
        admin, agent, other = actors.client("admin"), actors.client("agent"), actors.client("agent2")
        ver, human = actors.client("verifier"), actors.client("human")
        for i in range(3):
            task = new_task(admin, f"task {i}")
            attempt = agent.claim(task.id)
            agent.heartbeat(attempt.id)
            agent.task(task.id)
            cand = submit(agent, attempt, {f"src/out-{i}.txt": b"42\n"}, ("src/input.txt",))
            ver.verifications()
            receipt = verify(ver, world, ver.candidate(cand.id))
            agent.receipts(cand.id)
            complete(agent, task, attempt, cand, [receipt.id])
            agent.task(task.id)
            agent.candidate(cand.id)
            agent.receipt(receipt.id)
            admin.tasks()
            agent.events()
            agent.orientation()
            agent.artifacts()
            agent.artifact("src/input.txt")
            agent.collection("src/")
            human.observe("src/input.txt", "deployed", revision=1)
            agent.observations()
            spare = new_task(admin, f"spare {i}")
            first = agent.claim(spare.id)
            agent.attempt(first.id)
            agent.release(first.id)
            other.claim(spare.id)
            admin.reassign(spare.id, world.agent.id)
            admin.cancel(spare.id, "not needed")
            admin.principals()
            admin.grants()
            admin.policies()
            admin.checkers()
            agent.me()
            handed = new_task(admin, f"handed over {i}")
            held = agent.claim(handed.id)
            agent.handoff(held.id, notes="over to you")
            agent.handoff_view(handed.id)
            admin.migrate(handed.id, criteria={"tests": "unit@1"})
            ver.candidate_tree(cand.id)
            agent.events(after=3)
            extra = admin.grant(world.human.id, ["read"], ["docs/**"])
            admin.revoke_grant(extra.id)
        _refusals(world, admin, agent, human, (task, attempt, cand))
        admin.rotate_token(world.agent2.id)  # revokes the principal's earlier tokens
        admin.revoke_tokens(world.agent2.id)


def _refusals(world: World, admin: Client, agent: Client, human: Client, done: tuple[Any, Any, Any]) -> None:
    """Refused completions: what their details read (docs/reasons.md) must find its rows too."""
    with pytest.raises(CompletionRejected):  # task_not_active: the completion that ended it
        complete(agent, done[0], done[1], done[2], [], request_id="after-the-fact")
    task = new_task(admin, "refused")
    attempt = agent.claim(task.id)
    cand = submit(agent, attempt, {"src/refused.txt": b"1\n"}, ("src/input.txt",))
    human.edit_artifact("src/input.txt", human.put_blob(b"moved\n").digest, human.revision("src/input.txt"))
    admin.migrate(task.id, scope=["src/**", "docs/**"])
    admin.reassign(task.id, world.agent2.id)
    admin.revoke_grant(world.grants["agent"])
    with pytest.raises(CompletionRejected) as refused:
        complete(agent, task, attempt, cand, [])
    assert {"attempt_superseded", "not_authorized", "contract_mismatch", "dependency_stale"} <= set(
        refused.value.failed
    )


def _scanned_tables(plan: list[tuple[Any, ...]], statement: str) -> set[str]:
    """The ledger tables (by name or alias) that `plan` scans rather than searches."""
    names = {}
    for table, alias in _FROM.findall(statement):
        if table in _TABLES:
            names[table] = table
            if alias and alias.upper() not in ("WHERE", "ON", "JOIN", "LEFT", "ORDER", "GROUP", "LIMIT"):
                names[alias] = table
    found = set()
    for row in plan:
        m = _SCAN.match(row[3])
        if m and m.group(1) in names:
            found.add(names[m.group(1)])
    return found


def test_no_statement_with_a_where_scans_a_ledger_table(traced: tuple[World, list[str]]) -> None:
    world, statements = traced
    _traffic(world)
    ran = {st for st in statements if _CHECKED.match(st)}
    assert len(ran) > 50  # the traffic reached the ledger
    probe = sqlite3.connect(str(make_url(world.coord.store.url).database))
    try:
        scans = {}
        for statement in sorted(ran):
            if not re.search(r"\bWHERE\b", statement, re.IGNORECASE):
                continue
            tables = _scanned_tables(probe.execute("EXPLAIN QUERY PLAN " + statement).fetchall(), statement)
            if tables:
                scans[" ".join(statement.split())[:200]] = sorted(tables)
    finally:
        probe.close()
    assert scans == {}


def test_the_check_sees_a_scan() -> None:
    """The detector itself: an owner read without its index is reported, with it is not."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE candidates (id TEXT PRIMARY KEY, task_id TEXT, created_at REAL)")
    read = "SELECT c.id FROM candidates c WHERE c.task_id = 'x' ORDER BY c.created_at"
    assert _scanned_tables(conn.execute("EXPLAIN QUERY PLAN " + read).fetchall(), read) == {"candidates"}
    conn.execute("CREATE INDEX ix ON candidates (task_id, created_at)")
    assert _scanned_tables(conn.execute("EXPLAIN QUERY PLAN " + read).fetchall(), read) == set()
