"""Group commit (store/group.py) and the cross-process writer lock, with real threads and
processes on one SQLite file: writes that share a transaction still behave one by one."""

from __future__ import annotations

import multiprocessing
import os
import stat
import threading
import time
from pathlib import Path

import pytest

from studiolo.settings import Settings
from studiolo.store import Store, Tx, volatile


def _bump(key: str) -> object:
    def run(tx: Tx) -> int:
        value = int(tx.meta.get(key) or 0) + 1
        tx.meta.set(key, str(value))
        return value

    return run


def _store(tmp_path: Path) -> Store:
    store = Store(Settings.sqlite_url(tmp_path / "ledger.db"))
    store.upgrade()
    return store


def test_concurrent_writes_share_groups_and_lose_nothing(tmp_path: Path) -> None:
    store = _store(tmp_path)
    seen: list[int] = []

    def writer() -> None:
        for _ in range(25):
            seen.append(store.write(_bump("counter")))  # type: ignore[arg-type]

    threads = [threading.Thread(target=writer) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.read(lambda tx: tx.meta.get("counter")) == "300"
    assert sorted(seen) == list(range(1, 301))  # each write saw every write before it
    assert store.backend.group.grouped > 0 and store.backend.group.groups < 300  # fsyncs were shared
    store.dispose()


def test_a_failing_write_is_undone_alone_and_its_group_commits(tmp_path: Path) -> None:
    store = _store(tmp_path)
    leading = threading.Event()

    def slow(tx: Tx) -> None:  # holds the leader while the next group queues up
        leading.set()
        time.sleep(0.3)
        tx.meta.set("slow", "1")

    def failing(tx: Tx) -> None:
        tx.meta.set("failing", "written, then undone")
        raise ValueError("refused")

    errors: list[BaseException] = []

    def run(fn: object) -> None:
        try:
            store.write(fn)  # type: ignore[arg-type]
        except ValueError as exc:
            errors.append(exc)

    first = threading.Thread(target=run, args=(slow,))
    first.start()
    leading.wait(5)
    queued = [threading.Thread(target=run, args=(fn,)) for fn in (failing, _bump("after"))]
    for t in queued:
        t.start()
        time.sleep(0.05)
    for t in [first, *queued]:
        t.join()
    found = store.read(lambda tx: tx.meta.get_many(("slow", "failing", "after")))
    assert found == {"slow": "1", "after": "1"}
    assert [str(e) for e in errors] == ["refused"]
    assert store.backend.group.grouped >= 2  # the failing write and the next one shared a group
    store.dispose()


def test_a_lease_extension_commits_without_fsync_and_the_next_write_is_durable(tmp_path: Path) -> None:
    synced: list[int] = []

    def fsync(fd: int) -> None:
        synced.append(os.fstat(fd).st_ino)
        os.fsync(fd)

    store = Store(Settings.sqlite_url(tmp_path / "ledger.db"), fsync=fsync)
    store.upgrade()
    synced.clear()
    store.write(volatile(_bump("light")))
    assert synced == []  # no fsync for a lease extension
    store.write(_bump("heavy"))
    assert synced == [(tmp_path / "ledger.db-wal").stat().st_ino]  # the WAL, once
    # The writing connection commits NORMAL for good (the store syncs the WAL itself); every
    # other connection keeps FULL, so a commit made anywhere else syncs on its own.
    with store.backend.writes.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar_one() == 1
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar_one() == 2
    assert store.read(lambda tx: tx.meta.get_many(("light", "heavy"))) == {"light": "1", "heavy": "1"}
    store.dispose()


def _process_writer(url: str, n: int) -> None:
    store = Store(url)
    for _ in range(n):
        store.write(_bump("shared"))  # type: ignore[arg-type]
    store.dispose()


def test_processes_take_turns_on_the_writer_lock(tmp_path: Path) -> None:
    store = _store(tmp_path)
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_process_writer, args=(store.url, 60)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    assert store.read(lambda tx: tx.meta.get("shared")) == "180"
    lock = tmp_path / "ledger.db.writer-lock"
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    store.dispose()


def test_a_nested_write_is_refused_inside_a_group(tmp_path: Path) -> None:
    store = _store(tmp_path)
    with pytest.raises(RuntimeError, match=r"inside store\.write"):
        store.write(volatile(lambda tx: store.write(_bump("x"))))  # type: ignore[arg-type]
    assert store.read(lambda tx: tx.meta.get("x")) is None
    store.dispose()


class _SlowFsync:
    """An fsync that waits for the test to let it finish, and says which file it synced."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.synced: list[int] = []  # inode of each synced file

    def __call__(self, fd: int) -> None:
        self.synced.append(os.fstat(fd).st_ino)
        self.entered.set()
        assert self.release.wait(30)


def test_the_fsync_runs_outside_the_locks_and_before_the_durable_answer(tmp_path: Path) -> None:
    fsync = _SlowFsync()
    store = Store(Settings.sqlite_url(tmp_path / "ledger.db"), fsync=fsync)
    store.upgrade()
    answered: list[object] = []
    durable = threading.Thread(target=lambda: answered.append(store.write(_bump("durable"))))  # type: ignore[arg-type]
    durable.start()
    assert fsync.entered.wait(30)  # the durable group committed and is inside its fsync
    light = threading.Thread(target=lambda: answered.append(store.write(volatile(_bump("light")))))
    light.start()
    light.join(30)
    assert not light.is_alive() and answered == [1]  # the heartbeat did not wait for the fsync
    assert durable.is_alive()  # ... and the durable caller has not been answered yet
    seen: list[object] = []  # a reader is not told what is not yet on disk either
    reader = threading.Thread(target=lambda: seen.append(store.read(lambda tx: tx.meta.get("durable"))))
    reader.start()
    reader.join(0.5)
    assert reader.is_alive() and seen == []
    fsync.release.set()
    durable.join(30)
    reader.join(30)
    assert answered == [1, 1] and seen == ["1"]
    assert fsync.synced == [(tmp_path / "ledger.db-wal").stat().st_ino]  # the WAL, once
    store.dispose()


def test_a_failed_fsync_fails_the_durable_caller(tmp_path: Path) -> None:
    def broken(fd: int) -> None:
        raise OSError(5, "Input/output error")

    store = Store(Settings.sqlite_url(tmp_path / "ledger.db"), fsync=broken)
    store.upgrade()
    with pytest.raises(OSError, match="Input/output"):
        store.write(_bump("unsure"))  # type: ignore[arg-type]
    assert store.write(volatile(_bump("light"))) == 1  # no fsync of its own: answered
    store.dispose()
