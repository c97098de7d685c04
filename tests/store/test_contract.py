"""The storage contract: the same tests on SQLite and on PostgreSQL (`store_url`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import select, text
from sqlalchemy.exc import IntegrityError

from studiolo import CompletionRejected
from studiolo.core.model import Attempt, AttemptStatus, Event
from studiolo.store import Store, Tx, migrations
from studiolo.store import schema as s
from studiolo.store.audit import GENESIS, chained_hash
from tests.world import FakeClock, World, build_world


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    st = Store(store_url)
    st.upgrade()
    yield st
    st.dispose()


def _bump(key: str) -> Callable[[Tx], int]:
    def run(tx: Tx) -> int:
        value = int(tx.meta.get(key) or "0") + 1
        tx.meta.set(key, str(value))
        tx.audit.append(None, "test.bumped", None, key, {"value": value}, tx.now)
        return value

    return run


def _chain(store: Store) -> list[Event]:
    return store.read(lambda tx: list(tx.audit.iter_all()))


def _verify_chain(events: list[Event]) -> None:
    prev = GENESIS
    for n, e in enumerate(events, start=1):
        assert e.seq == n and e.prev_hash == prev
        assert chained_hash(prev, e) == e.hash  # the rule of events after migration 0016
        prev = e.hash


# schema ------------------------------------------------------------------------------
def test_upgrade_reaches_head_and_is_idempotent(store: Store) -> None:
    assert store.schema_revision() == migrations.head()
    assert store.upgrade() == migrations.head()
    assert store.schema_revision() == migrations.head()


def test_the_migrations_build_exactly_the_declared_schema(store: Store) -> None:
    """Fails when schema.py changes without a migration (or a migration without schema.py)."""
    with store.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), s.metadata)
    assert diff == []


def test_a_ledger_made_before_migrations_is_stamped_then_upgraded(store_url: str) -> None:
    legacy = Store(store_url)
    with legacy.engine.begin() as conn:  # the baseline tables, as create_all made them, unversioned
        migrations.upgrade(conn, migrations.BASELINE)
        conn.execute(text("DROP TABLE alembic_version"))
    assert legacy.schema_revision() is None
    assert legacy.upgrade() == migrations.head()
    legacy.dispose()


# transactions ------------------------------------------------------------------------
def test_a_failed_write_changes_nothing(store: Store) -> None:
    def fails(tx: Tx) -> None:
        _bump("n")(tx)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        store.write(fails)
    assert store.read(lambda tx: tx.meta.get("n")) is None
    assert _chain(store) == []
    assert store.write(_bump("n")) == 1  # and the writer gate was released


def test_writers_on_several_stores_lose_no_update_and_chain_every_event(store_url: str) -> None:
    """Four 'replicas' (separate engines and pools) × four threads, one counter."""
    replicas = [Store(store_url) for _ in range(4)]
    replicas[0].upgrade()
    per_thread = 15
    errors: list[BaseException] = []

    def work(st: Store) -> None:
        try:
            for _ in range(per_thread):
                st.write(_bump("n"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(st,)) for st in replicas for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    total = len(threads) * per_thread
    assert replicas[0].read(lambda tx: tx.meta.get("n")) == str(total)
    events = _chain(replicas[0])
    assert [e.data["value"] for e in events] == list(range(1, total + 1))  # commit order = chain order
    _verify_chain(events)
    for st in replicas:
        st.dispose()


def test_unique_violations_surface_and_are_not_retried(store: Store) -> None:
    store.write(lambda tx: tx.meta.set("k", "v"))

    def duplicate(tx: Tx) -> None:
        tx.conn.execute(s.meta.insert().values(key="k", value="w"))

    with pytest.raises(IntegrityError):
        store.write(duplicate)
    assert store.retries == 0
    assert store.read(lambda tx: tx.meta.get("k")) == "v"


# the authority clock -----------------------------------------------------------------
def test_the_service_clock_never_moves_backwards_even_across_processes(store_url: str) -> None:
    clock = FakeClock(2_000_000_000.0)
    first = Store(store_url, clock=clock, clock_source="service")
    first.upgrade()
    assert first.write(lambda tx: tx.now) == 2_000_000_000.0
    clock.advance(-500)  # the service clock steps back
    assert first.write(lambda tx: tx.now) == 2_000_000_000.0
    again = Store(store_url, clock=clock, clock_source="service")  # a restarted process
    assert again.read(lambda tx: tx.now) == 2_000_000_000.0
    clock.advance(1000)
    assert again.write(lambda tx: tx.now) == 2_000_000_500.0
    first.dispose()
    again.dispose()


@pytest.mark.postgres
def test_postgres_leases_run_on_the_database_clock(pg_url: str) -> None:
    import time

    frozen = FakeClock(1_000.0)  # ignored: the server's clock is the authority
    st = Store(pg_url, clock=frozen)
    st.upgrade()
    nows = [st.write(lambda tx: tx.now) for _ in range(5)]
    assert nows == sorted(nows)
    assert abs(nows[-1] - time.time()) < 60  # same host: the server's clock, not the fake one
    st.write(lambda tx: tx.meta.set("clock_last", repr(time.time() + 3600)))  # a clock that stepped
    assert st.write(lambda tx: tx.now) >= time.time() + 3599  # ... is never undercut
    st.dispose()


# repositories: values that differ between back-ends -----------------------------------
def test_values_round_trip_exactly(world_on: Callable[[], World]) -> None:
    w = world_on()
    blob = bytes(range(256)) * 4096  # every byte value, 1 MiB
    digest = w.put(blob)
    assert w.coord.get_blob(w.agent, digest) == blob
    path = "docs/ünï cödé/1%_b/done.txt"  # NFC, and LIKE's metacharacters in a prefix
    w.edit(path, b"x")
    w.edit("docs/ünï cödé/1xxb/done.txt", b"y")
    listed = w.coord.list_artifacts(w.admin, w.project_id, "docs/ünï cödé/1%_b/")
    assert [a.path for a in listed] == [path]
    task = w.new_task()
    att = w.coord.claim(w.agent, task.id, 12.345678901234567)
    got = w.coord.attempt(w.agent, att.id)
    assert got.lease_deadline == att.lease_deadline  # every bit of a double


def test_a_large_fence_round_trips(store: Store) -> None:
    def run(tx: Tx) -> Attempt | None:
        return tx.work.attempt("att_missing")

    assert store.read(run) is None
    big = 2**53 - 1
    store.write(lambda tx: tx.meta.set("fence_floor", str(big)))
    assert store.read(lambda tx: tx.meta.get("fence_floor")) == str(big)


# the completion contract on either back-end ------------------------------------------
@pytest.fixture
def world_on(store_url: str, tmp_path: Path) -> Iterator[Callable[[], World]]:
    made: list[World] = []

    def make() -> World:
        made.append(build_world(tmp_path, url=store_url))
        return made[-1]

    yield make
    for w in made:
        w.coord.store.dispose()


def test_complete_replay_and_reject(world_on: Callable[[], World]) -> None:
    w = world_on()
    task = w.new_task()
    att = w.coord.claim(w.agent, task.id, 60)
    cand = w.candidate(att, {"src/answer.txt": b"42\n"}, deps={"src/input.txt": 1})
    receipt = w.receipt(cand)
    out = w.complete(task, att, cand, [receipt.id], request_id="req-1")
    assert not out.replay
    again = w.complete(task, att, cand, [receipt.id], request_id="req-1")
    assert again.replay and again.completion == out.completion
    with pytest.raises(CompletionRejected) as err:
        w.complete(task, att, cand, [receipt.id], request_id="req-2")
    assert err.value.failed[0] == "task_not_active"
    state = w.coord.store.read(lambda tx: tx.work.attempt(att.id))
    assert state is not None and state.status is AttemptStatus.COMPLETED
    assert w.coord.verify_audit().ok


def test_revocation_before_commit_rejects_on_either_back_end(world_on: Callable[[], World]) -> None:
    w = world_on()
    task = w.new_task()
    att = w.coord.claim(w.agent, task.id, 60)
    cand = w.candidate(att, {"src/answer.txt": b"42\n"})
    receipt = w.receipt(cand)
    w.coord.revoke_grant(w.admin, w.grants["agent"])
    with pytest.raises(CompletionRejected) as err:
        w.complete(task, att, cand, [receipt.id])
    assert err.value.reason == "not_authorized"
    rows = w.coord.store.read(lambda tx: tx.conn.execute(select(s.completions)).all())
    assert rows == []


def test_a_write_inside_a_write_is_refused_not_deadlocked(store: Store) -> None:
    with pytest.raises(RuntimeError, match="inside store\\.write"):
        store.write(lambda tx: store.write(_bump("n")))
    assert store.write(_bump("n")) == 1


def test_evidence_for_twin_bytes_and_blob_paths_on_either_back_end(world_on: Callable[[], World]) -> None:
    """The issue-9 reads: a failing receipt for the same bytes counts; the paths holding a blob."""
    w = world_on()
    task = w.new_task()
    att = w.coord.claim(w.agent, task.id, 60)
    cand = w.candidate(att, {"src/answer.txt": b"41\n"})
    twin = w.candidate(att, {"src/answer.txt": b"41\n"})
    w.receipt(cand, result="fail")  # the same bytes failed: the twin's pass is not enough
    w.clock.advance(1)
    passing = w.receipt(twin)
    with pytest.raises(CompletionRejected) as err:
        w.complete(task, att, twin, [passing.id])
    assert err.value.failed == ("evidence_failed",)
    digest = cand.files["src/answer.txt"]
    assert digest is not None
    w.edit("docs/copy.txt", b"41\n")
    paths = w.coord.store.read(lambda tx: tx.content.paths_of_blob(w.project_id, digest))
    assert paths == {"src/answer.txt", "docs/copy.txt"}
