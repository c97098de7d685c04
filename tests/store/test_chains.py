"""One audit chain per project: links, verification, tampering, the migration of a ledger
whose events predate per-project chains, and (PostgreSQL) projects that commit in parallel."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, insert, select, text, update

from studiolo.core.model import Event
from studiolo.store import Store, Tx, migrations
from studiolo.store import schema as s
from studiolo.store.audit import GENESIS, chained_hash, event_body, event_hash, verify_log
from studiolo.store.gate import Gate
from tests.store.pgdb import write_from_threads
from tests.world import World, add_project, build_world


def _complete_one(w: World) -> None:
    task = w.new_task()
    att = w.coord.claim(w.agent, task.id, 600)
    cand = w.candidate(att, {"src/answer.txt": b"42\n"}, deps={"src/input.txt": 1})
    w.complete(task, att, cand, [w.receipt(cand).id])


def _two_projects(tmp: Path, url: str) -> tuple[World, World]:
    a = build_world(tmp, url=url)
    b = add_project(a.coord, a.admin, a.clock, "other")
    return a, b


def _events(store: Store) -> list[dict[str, Any]]:
    with store.engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(select(s.events).order_by(s.events.c.seq))]


def test_each_event_links_to_the_previous_event_of_its_project(store_url: str, tmp_path: Path) -> None:
    a, b = _two_projects(tmp_path, store_url)
    for _ in range(2):
        _complete_one(a)
        _complete_one(b)
    events = _events(a.coord.store)
    last: dict[str | None, str] = {}
    for e in events:
        assert e["prev_hash"] == last.get(e["project_id"], GENESIS)
        last[e["project_id"]] = e["hash"]
    assert {e["project_id"] for e in events} == {None, a.project_id, b.project_id}
    report = a.coord.verify_audit()
    assert report.ok and report.events == len(events)
    a.coord.store.dispose()


def _tamper(store: Store, stmt: Any) -> None:
    with store.engine.begin() as conn:
        conn.execute(stmt)


@pytest.mark.parametrize(
    "how",
    ["altered", "moved to another project", "tail removed", "head forged", "forked"],
)
def test_tampering_with_one_chain_is_found(store_url: str, tmp_path: Path, how: str) -> None:
    a, b = _two_projects(tmp_path, store_url)
    _complete_one(a)
    _complete_one(b)
    store = a.coord.store
    mine = [e for e in _events(store) if e["project_id"] == a.project_id]
    victim = mine[-3]
    ev = s.events
    if how == "altered":
        _tamper(store, update(ev).where(ev.c.seq == victim["seq"]).values(subject="forged"))
    elif how == "moved to another project":
        _tamper(store, update(ev).where(ev.c.seq == victim["seq"]).values(project_id=b.project_id))
    elif how == "tail removed":
        _tamper(store, delete(ev).where(ev.c.seq == mine[-1]["seq"]))
    elif how == "head forged":
        _tamper(store, update(s.chains).where(s.chains.c.chain == a.project_id).values(hash=victim["hash"]))
    else:  # a second event after `victim`, validly hashed: two events share one predecessor
        seq = max(e["seq"] for e in _events(store)) + 1
        draft = Event(seq, a.project_id, "task.cancelled", None, "tsk_x", {}, 1.0, victim["hash"], "")
        digest = chained_hash(victim["hash"], draft)
        row = {**event_body(draft), "data": "{}", "at": 1.0, "prev_hash": victim["hash"], "hash": digest}
        _tamper(store, insert(ev).values(row))
    report = a.coord.verify_audit()
    assert not report.ok and report.problem
    store.dispose()


def test_a_write_that_appends_outside_its_gate_is_rerun_under_a_wider_one(store_url: str) -> None:
    store = Store(store_url)
    store.upgrade()

    def log_both(tx: Tx) -> int:
        tx.audit.append("prj_aaaaaaaa", "x.one", None, None, {}, tx.now)
        return tx.audit.append(None, "x.two", None, None, {}, tx.now).seq

    store.write(lambda tx: tx.meta.set("k", "v"))
    seq = store.write(log_both, Gate.project("prj_aaaaaaaa"))
    assert store.widenings == 1
    events = store.read(lambda tx: tx.audit.events())
    assert [e.kind for e in events] == ["x.one", "x.two"] and events[-1].seq == seq
    store.dispose()


# migration of a ledger with one global chain -----------------------------------------
def _legacy_ledger(url: str) -> tuple[Store, list[Event]]:
    """A ledger at schema 0007 whose events link in one global chain across two projects."""
    store = Store(url)
    with store.engine.begin() as conn:
        migrations.upgrade(conn, "0007")
        conn.execute(insert(s.meta).values(key="clock_last", value="100.0"))
    prev, made = GENESIS, []
    for seq, project in enumerate(["prj_aaaaaaaa", None, "prj_bbbbbbbb", "prj_aaaaaaaa"], start=1):
        draft = Event(seq, project, "note", None, None, {"n": seq}, 10.0 + seq, prev, "")
        e = replace(draft, hash=event_hash(prev, event_body(draft)))
        row = {**event_body(e), "data": f'{{"n":{seq}}}', "at": e.at, "prev_hash": prev, "hash": e.hash}
        with store.engine.begin() as conn:
            conn.execute(insert(s.events).values(row))
        prev = e.hash
        made.append(e)
    return store, made


def test_a_ledger_with_one_global_chain_migrates_and_keeps_verifying(store_url: str, tmp_path: Path) -> None:
    store, legacy = _legacy_ledger(store_url)
    assert store.upgrade() == migrations.head()
    with store.engine.connect() as conn:
        heads = dict(conn.execute(select(s.chains.c.chain, s.chains.c.hash)).all())
        split = conn.execute(text("SELECT value FROM meta WHERE key = 'chain_split'")).scalar()
        detail = conn.execute(text("SELECT value FROM meta WHERE key = 'detail_split'")).scalar()
    assert split == "4" and detail == "4"  # the legacy events keep the old rule
    assert heads == {"prj_aaaaaaaa": legacy[3].hash, "": legacy[1].hash, "prj_bbbbbbbb": legacy[2].hash}
    b = "prj_bbbbbbbb"
    store.write(lambda tx: tx.audit.append(b, "after", None, None, {}, tx.now), Gate.project(b))
    new = store.read(lambda tx: tx.audit.events(after=4))
    assert len(new) == 1 and new[0].seq > 4 and new[0].prev_hash == legacy[2].hash
    check = store.read(lambda tx: verify_log(tx.audit.iter_all(), 4, tx.audit.heads(), 4))
    assert check.problem == "" and check.events == 5
    store.dispose()


# PostgreSQL: projects commit in parallel ------------------------------------------------
def _ready(w: World, path: str = "src/answer.txt") -> Any:
    """Everything but the commit of one completion in `w`'s project."""
    task = w.new_task()
    att = w.coord.claim(w.agent, task.id, 600)
    cand = w.candidate(att, {path: b"42\n"}, deps={"src/input.txt": 1})
    receipt = w.receipt(cand).id
    return lambda: w.complete(task, att, cand, [receipt])


def _hold(store: Store, gate: Gate, holding: threading.Event, release: threading.Event) -> threading.Thread:
    """Another replica's writer (its own Store: its own sessions) that sits inside `gate`."""

    def sit(tx: Tx) -> None:
        holding.set()
        assert release.wait(30)

    thread = threading.Thread(target=store.write, args=(sit, gate))
    thread.start()
    assert holding.wait(30)
    return thread


def _in_thread(fn: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    return thread, out


@pytest.mark.postgres
def test_a_project_holding_its_gate_does_not_block_another_projects_completion(
    pg_url: str, tmp_path: Path
) -> None:
    a, b = _two_projects(tmp_path, pg_url)
    finish_a, finish_b = _ready(a), _ready(b)
    other = Store(pg_url)  # a second replica
    holding, release = threading.Event(), threading.Event()
    holder = _hold(other, Gate.project(a.project_id), holding, release)
    try:
        waiting_a, done_a = _in_thread(finish_a)
        waiting_b, done_b = _in_thread(finish_b)
        waiting_b.join(20)
        assert not waiting_b.is_alive() and done_b and not done_b[0].replay  # B committed
        time.sleep(0.3)
        assert waiting_a.is_alive() and not done_a  # A waits for its gate
    finally:
        release.set()
        holder.join(30)
    waiting_a.join(30)
    assert done_a and not done_a[0].replay
    assert a.coord.verify_audit().ok
    other.dispose()
    a.coord.store.dispose()


@pytest.mark.postgres
def test_a_whole_ledger_write_waits_for_project_writers_and_holds_new_ones_back(
    pg_url: str, tmp_path: Path
) -> None:
    a, b = _two_projects(tmp_path, pg_url)
    finish_b = _ready(b)
    other = Store(pg_url)
    holding, release = threading.Event(), threading.Event()
    holder = _hold(other, Gate.project(a.project_id), holding, release)
    try:
        admin_write, admin_done = _in_thread(lambda: a.coord.rotate_service_key())
        time.sleep(0.3)
        assert admin_write.is_alive()  # waits for project A's writer to finish
        waiting_b, done_b = _in_thread(finish_b)
        time.sleep(0.3)
        assert waiting_b.is_alive() and not done_b  # queued behind the whole-ledger writer
    finally:
        release.set()
        holder.join(30)
    admin_write.join(30)
    waiting_b.join(30)
    assert admin_done and done_b
    seqs = {e.kind: e.seq for e in a.coord.store.read(lambda tx: tx.audit.events(limit=10_000))}
    assert seqs["service_key.rotated"] < seqs["completion.accepted"]  # seq order is commit order
    other.dispose()
    a.coord.store.dispose()


def test_an_incremental_verification_reads_each_chain_after_its_verified_head(
    store_url: str, tmp_path: Path
) -> None:
    a, b = _two_projects(tmp_path, store_url)
    first = a.coord.verify_audit()
    _complete_one(a)
    _complete_one(b)
    whole = a.coord.verify_audit()
    assert a.coord.verify_audit(since=first) == whole and whole.events > first.events
    newest_b = max(e["seq"] for e in _events(a.coord.store) if e["project_id"] == b.project_id)
    _tamper(a.coord.store, update(s.events).where(s.events.c.seq == newest_b).values(subject="forged"))
    report = a.coord.verify_audit(since=first)
    assert not report.ok and report.first_bad_seq == newest_b
    a.coord.store.dispose()


@pytest.mark.postgres
def test_without_gates_concurrent_appenders_of_one_chain_retry_and_never_fork(pg_url: str) -> None:
    """The chain's head row makes two appenders conflict even when no gate orders them: the
    loser's (pipelined) transaction fails, is rolled back and retried with a new seq."""
    stores = [Store(pg_url, writer_gate=False, max_retries=200) for _ in range(3)]
    stores[0].upgrade()

    def append(tx: Tx) -> None:
        tx.audit.append("prj_aaaaaaaa", "x.note", None, None, {}, tx.now)

    threads = write_from_threads(stores, append, 10, Gate.project("prj_aaaaaaaa"))
    assert sum(st.retries for st in stores) > 0
    seqs = [e["seq"] for e in _events(stores[0])]
    assert len(seqs) == threads * 10
    check = stores[0].read(lambda tx: verify_log(tx.audit.iter_all(), 0, tx.audit.heads()))
    assert check.problem == ""
    for st in stores:
        st.dispose()


@pytest.mark.postgres
def test_projects_completing_at_once_never_abort_each_other(pg_url: str, tmp_path: Path) -> None:
    """Under their gates, writes of different projects share no row: none is aborted as a
    serialization conflict with another project's (and so none is retried)."""
    a = build_world(tmp_path, url=pg_url)
    worlds = [a, *(add_project(a.coord, a.admin, a.clock, f"p{n}") for n in range(3))]
    ready = [[_ready(w, f"src/t{n}.txt") for n in range(4)] for w in worlds]
    done: list[bool] = []

    def run(finishers: list[Any]) -> None:
        done.extend(not finish().replay for finish in finishers)

    threads = [threading.Thread(target=run, args=(r,)) for r in ready]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert done == [True] * 16
    assert a.coord.store.retries == 0 and a.coord.verify_audit().ok
    a.coord.store.dispose()
