"""PostgreSQL specifics: the writer gate, SERIALIZABLE retries without it, lost connections."""

from __future__ import annotations

import ast
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import event
from sqlalchemy.engine import make_url

from studiolo.core.model import Project
from studiolo.settings import Settings
from studiolo.store import Store, Tx, postgres
from studiolo.store._raw import Raw
from studiolo.store.engine import WRITER_GATE
from studiolo.store.gate import Gate
from tests.store.pgdb import write_from_threads

pytestmark = pytest.mark.postgres


@pytest.fixture
def store(pg_url: str) -> Iterator[Store]:
    st = Store(pg_url)
    st.upgrade()
    yield st
    st.dispose()


def _raw(url: str) -> psycopg.Connection[tuple[object, ...]]:
    conninfo = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    return psycopg.connect(conninfo, autocommit=True)


# Only this test's (fresh) database: other PostgreSQL clients on the server hold locks too.
_THIS_DB = " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"


def _increment(tx: Tx) -> None:
    value = int(tx.meta.get("n") or "0")
    tx.meta.set("n", str(value + 1))


def test_without_the_gate_serializable_retries_keep_every_update(pg_url: str) -> None:
    """The gate is an optimization: SERIALIZABLE alone still loses nothing (it retries)."""
    stores = [Store(pg_url, writer_gate=False, max_retries=200) for _ in range(4)]
    stores[0].upgrade()
    threads = write_from_threads(stores, _increment, 15)
    assert stores[0].read(lambda tx: tx.meta.get("n")) == str(threads * 15)
    assert sum(st.retries for st in stores) > 0  # serialization failures happened and were retried
    for st in stores:
        st.dispose()


def test_the_gate_is_held_for_the_transaction_and_released_after(store: Store, pg_url: str) -> None:
    seen: list[int] = []

    def look(tx: Tx) -> None:
        _ = tx.now  # the write's first answer: the server has run the gate's locks by then
        with _raw(pg_url) as other:
            row = other.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                + _THIS_DB
                + " AND ((classid::bigint << 32) | objid::bigint) = %s",
                (WRITER_GATE,),
            ).fetchone()
            assert row is not None
            seen.append(int(row[0]))

    store.write(look)
    look_after: list[int] = []
    store.read(lambda tx: look_after.append(0))
    with _raw(pg_url) as other:
        row = other.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'" + _THIS_DB).fetchone()
    assert seen == [1] and row is not None and row[0] == 0


def test_a_dropped_connection_is_replaced(store: Store, pg_url: str) -> None:
    store.write(_increment)
    store.read(lambda tx: tx.meta.get("n"))
    with _raw(pg_url) as admin:  # the server restarts, a proxy drops idle sessions, ...
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    assert store.read(lambda tx: tx.meta.get("n")) == "1"
    for batched in (True, False):  # a read in pipeline mode finds the session dead and reruns too
        store.read(lambda tx: tx.meta.get("n"), batched=batched)
        with _raw(pg_url) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        retries = store.retries
        assert store.read(lambda tx: tx.meta.get("n"), batched=True) == "1"
        assert store.retries > retries  # it met a dead session, then ran again
    store.write(_increment)
    with _raw(pg_url) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    store.write(_increment)
    assert store.read(lambda tx: tx.meta.get("n")) == "3"


def test_a_cold_read_through_raw_finds_the_session_dead_and_reruns(store: Store, pg_url: str) -> None:
    """An unbatched read whose session dies after it began meets the death in a statement
    through `Raw`, as psycopg's own error that SQLAlchemy never saw: still a `Reconnect`,
    and the read reruns (it has no effects)."""
    store.write(_increment)
    killed: list[int] = []

    def read(tx: Tx) -> list[Project]:
        if not killed:  # the first run's session dies between BEGIN and its first statement
            killed.append(1)
            with _raw(pg_url) as admin:
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
        return tx.access.projects()

    retries = store.retries
    assert store.read(read) == []
    assert killed == [1] and store.retries == retries + 1


def _advisory_locks(url: str) -> int:
    with _raw(url) as other:
        row = other.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'" + _THIS_DB).fetchone()
    assert row is not None
    return int(row[0])


def _no_transaction_left_open(store: Store) -> None:
    """The pooled connection is idle: it was not returned inside a (failed) transaction."""
    with store.engine.connect() as conn:
        raw: Any = conn.connection.dbapi_connection
        assert raw.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert raw.autocommit is False


@pytest.mark.parametrize("gate", [Gate.project("prj_a"), Gate.whole_ledger()], ids=["project", "ledger"])
def test_a_failed_statement_nobody_waited_for_fails_the_write_and_frees_its_gate(
    store: Store, pg_url: str, gate: Gate
) -> None:
    """A write sent without waiting for its answer (`Raw.send`) fails at the end of the
    transaction: the error reaches the caller, nothing of the transaction stays, and the
    gate's locks are released even though the server skipped COMMIT and the release."""
    store.write(lambda tx: tx.meta.set("kept", "1"))

    def doomed(tx: Tx) -> None:
        tx.meta.set("lost", "1")
        Raw(tx.conn).send("INSERT INTO meta (key, value) VALUES (:k, :v)", {"k": "kept", "v": "2"})

    for _ in range(10):  # the error's answer arrives before, while or after the end is sent
        with pytest.raises(psycopg.errors.UniqueViolation):
            store.write(doomed, gate)
        assert store.read(lambda tx: (tx.meta.get("kept"), tx.meta.get("lost"))) == ("1", None)
        assert _advisory_locks(pg_url) == 0
        _no_transaction_left_open(store)
    store.write(_increment, gate)  # the gate and the connection serve the next write
    assert store.read(lambda tx: tx.meta.get("n")) == "1"


def test_an_error_that_arrives_while_the_release_is_sent_still_frees_the_gate(
    store: Store, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failed statement's answer arrives after COMMIT was sent and before the gate's
    release is: sending the release raises it (psycopg reads what has arrived). The release
    is queued all the same, answered, and the write's error is what the caller sees."""
    store.write(lambda tx: tx.meta.set("kept", "1"))
    ends: list[object] = []
    send = postgres._send

    def slow_send(cursor: Any, sql: bytes | str, params: Any = None) -> None:
        ends.append(sql)
        if len(ends) == 2:  # the release: let the slow failure answer first
            time.sleep(0.2)
        send(cursor, sql, params)

    monkeypatch.setattr(postgres, "_send", slow_send)

    def doomed(tx: Tx) -> None:
        _ = tx.now
        Raw(tx.conn).send("INSERT INTO meta (key, value) SELECT 'kept', '2' FROM pg_sleep(0.05)", {})

    with pytest.raises(psycopg.errors.UniqueViolation):
        store.write(doomed, Gate.project("prj_a"))
    assert len(ends) == 2 and ends[0] == b"COMMIT"  # COMMIT, then the release
    assert _advisory_locks(pg_url) == 0
    _no_transaction_left_open(store)
    assert store.read(lambda tx: tx.meta.get("kept")) == "1"


def test_a_write_that_raises_rolls_back_and_frees_its_gate(store: Store, pg_url: str) -> None:
    def fails(tx: Tx) -> None:
        tx.meta.set("lost", "1")
        Raw(tx.conn).send("UPDATE meta SET value = :v WHERE key = :k", {"k": "lost", "v": "2"})
        raise ValueError("the door refused")

    with pytest.raises(ValueError, match="the door refused"):
        store.write(fails, Gate.project("prj_a"))
    assert store.read(lambda tx: tx.meta.get("lost")) is None
    assert _advisory_locks(pg_url) == 0
    _no_transaction_left_open(store)


def test_a_connection_lost_before_commit_is_a_safe_retry(store: Store, pg_url: str) -> None:
    """The session dies in the middle of a write (after its gate, before COMMIT): nothing
    was committed, so the store runs the write again on a new connection, once."""
    runs: list[int] = []

    def increment_once_killed(tx: Tx) -> None:
        runs.append(1)
        _increment(tx)
        if len(runs) == 1:
            pid = Raw(tx.conn).one("SELECT pg_backend_pid()", {})
            assert pid is not None
            with _raw(pg_url) as admin:
                admin.execute("SELECT pg_terminate_backend(%s, 10000)", (pid[0],))  # waits for it to end
            tx.meta.get_many(("incarnation",))  # the next answer finds the session gone

    store.write(increment_once_killed, Gate.project("prj_a"))
    assert len(runs) == 2
    assert store.read(lambda tx: tx.meta.get("n")) == "1"
    assert _advisory_locks(pg_url) == 0


def test_reads_sent_together_answer_as_one_by_one_around_unanswered_writes(store: Store) -> None:
    """`Raw.later` in a pipelined write: each read sees the writes sent before it, and
    only those, whenever its rows are fetched."""

    def run(tx: Tx) -> list[object]:
        raw = Raw(tx.conn)
        count = "SELECT count(*) FROM meta WHERE key LIKE 'k%'"
        raw.send("INSERT INTO meta (key, value) VALUES ('k1', '1')", {})
        first = raw.later(count, {})
        raw.send("INSERT INTO meta (key, value) VALUES ('k2', '2')", {})
        second = raw.later(count, {})
        third = raw.all(count, {})
        return [second()[0][0], first()[0][0], third[0][0]]

    assert store.write(run) == [2, 1, 2]


def test_the_store_calls_no_private_driver_api() -> None:
    """STYLE 16: only public psycopg and sqlite3 calls (a private one, such as psycopg's
    `Pipeline._enqueue_sync`, may change in any release)."""
    private = {
        name
        for kind in (psycopg.Pipeline, psycopg.Connection, psycopg.Cursor, sqlite3.Connection, sqlite3.Cursor)
        for name in dir(kind)
        if name.startswith("_") and not name.startswith("__")
    }
    used = [
        f"{path.name}:{node.lineno} {name}"
        for path in sorted(Path(postgres.__file__).parent.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        for name in _private_names(node)
        if name in private
    ]
    assert not used, used


_LOOKUPS = ("getattr", "hasattr")


def _private_names(node: ast.AST) -> list[str]:
    """Private names `node` reaches on an object other than `self`: `x._name`, or
    `getattr(x, "_name", ...)`."""
    if isinstance(node, ast.Attribute) and not (isinstance(node.value, ast.Name) and node.value.id == "self"):
        return [node.attr]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "hasattr")
    ):
        args = node.args[1:2]  # type: ignore[attr-defined]
        return [a.value for a in args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return []


# A project's writes commit in groups -------------------------------------------------
def _as_one_group(store: Store, gate: Gate, writes: list[Any]) -> list[object]:
    """Run `writes` from threads of their own so that they commit as one group: the chain's
    leader lock is held until every one of them is queued. Each write's result, or what it
    raised."""
    group = store.backend.chain_group(gate)
    assert group is not None
    outcomes: list[object] = [None] * len(writes)

    def run(i: int) -> None:
        try:
            outcomes[i] = store.write(writes[i], gate)
        except Exception as exc:
            outcomes[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(writes))]
    with group._leader:
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while len(group._pending) < len(writes):  # each waits behind the held leader lock
            assert time.monotonic() < deadline, "the writes were not queued"
            time.sleep(0.001)
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    return outcomes


def _setting(key: str, value: str) -> Any:
    def run(tx: Tx) -> str:
        tx.meta.set(key, value)
        return value

    return run


def test_queued_writes_of_a_project_commit_as_one_group_and_one_that_raises_fails_alone(
    store: Store, pg_url: str
) -> None:
    def refused(tx: Tx) -> None:
        tx.meta.set("b", "1")
        raise ValueError("the door refused")

    gate = Gate.project("prj_a")
    outcomes = _as_one_group(store, gate, [_setting("a", "1"), refused, _setting("c", "1"), _increment])
    group = store.backend.chain_group(gate)
    assert group is not None and group.groups == 1 and group.grouped == 4  # one transaction
    assert outcomes[0] == "1" and outcomes[2] == "1" and outcomes[3] is None
    assert isinstance(outcomes[1], ValueError)
    seen = store.read(lambda tx: [tx.meta.get(k) for k in ("a", "b", "c", "n")])
    assert seen == ["1", None, "1", "1"]  # the refused write left nothing, the others all stay
    assert store.backend.regrouped == 0
    assert _advisory_locks(pg_url) == 0
    _no_transaction_left_open(store)


def test_a_database_error_in_a_group_fails_only_the_write_that_made_it(store: Store, pg_url: str) -> None:
    """A failed statement aborts the group's transaction and everything sent after it, so
    the group cannot tell whose it was: each write is run again alone, and only the one that
    made the error gets it."""
    store.write(_setting("kept", "1"))

    def doomed(tx: Tx) -> None:
        tx.meta.set("lost", "1")
        Raw(tx.conn).send("INSERT INTO meta (key, value) VALUES (:k, :v)", {"k": "kept", "v": "2"})

    gate = Gate.project("prj_a")
    outcomes = _as_one_group(store, gate, [_setting("a", "1"), doomed, _increment, _setting("c", "1")])
    assert isinstance(outcomes[1], psycopg.errors.UniqueViolation)
    assert [outcomes[0], outcomes[2], outcomes[3]] == ["1", None, "1"]
    seen = store.read(lambda tx: [tx.meta.get(k) for k in ("a", "lost", "n", "c", "kept")])
    assert seen == ["1", None, "1", "1", "1"]
    assert store.backend.regrouped == 1
    assert _advisory_locks(pg_url) == 0
    _no_transaction_left_open(store)


def test_many_threads_writing_one_project_lose_no_update(store: Store) -> None:
    """Threads of one process write one project at once (they commit in groups as they
    queue): every read-modify-write sees the one before it, in groups and across them."""
    gate = Gate.project("prj_a")
    threads = [
        threading.Thread(target=lambda: [store.write(_increment, gate) for _ in range(25)]) for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert store.read(lambda tx: tx.meta.get("n")) == "200"
    group = store.backend.chain_group(gate)
    assert group is not None and group.groups <= 200


def test_the_pool_keeps_its_connections_and_opens_no_more(pg_url: str) -> None:
    """`STUDIOLO_DB_POOL_SIZE` connections, no overflow: twice as many threads reading at
    once share them (an overflow connection would be opened, then closed on its return)."""
    assert Settings.from_env({"STUDIOLO_DB_POOL_SIZE": "3"}).db_pool_size == 3
    with pytest.raises(ValueError, match="pool_size 0"):
        Store(pg_url, pool_size=0)
    store = Store(pg_url, pool_size=3)
    store.upgrade()
    opened: list[int] = []
    event.listen(store.engine, "connect", lambda *_: opened.append(1))

    def slow(tx: Tx) -> str | None:
        time.sleep(0.01)  # holds its connection while the other threads want one
        return tx.meta.get("n")

    threads = [threading.Thread(target=lambda: [store.read(slow) for _ in range(10)]) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(opened) <= 3
    store.dispose()


def test_a_group_whose_session_is_lost_after_commit_was_sent_runs_nothing_again(
    store: Store, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Committed or not, nobody can tell: every write of the group gets the error, as a write
    alone does, and none is run again (it could apply twice)."""
    sent = postgres._send
    runs: list[str] = []

    def lost_at_commit(cursor: Any, sql: bytes | str, params: Any = None) -> None:
        if sql == b"COMMIT":
            pid = cursor.connection.info.backend_pid
            with _raw(pg_url) as admin:
                admin.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,))
        sent(cursor, sql, params)

    def counted(key: str) -> Any:
        def run(tx: Tx) -> None:
            runs.append(key)
            tx.meta.set(key, "1")

        return run

    monkeypatch.setattr(postgres, "_send", lost_at_commit)
    outcomes = _as_one_group(store, Gate.project("prj_a"), [counted("a"), counted("b"), counted("c")])
    assert all(isinstance(o, psycopg.OperationalError) for o in outcomes), outcomes
    assert sorted(runs) == ["a", "b", "c"] and store.backend.regrouped == 0
    monkeypatch.setattr(postgres, "_send", sent)
    assert store.read(lambda tx: [tx.meta.get(k) for k in "abc"]) == [None, None, None]
