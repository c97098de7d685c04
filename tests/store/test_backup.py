"""Backup and restore on both back-ends and across them; a restore is a new incarnation."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from sqlalchemy import select
from typer.testing import CliRunner

from studiolo import CompletionRejected, Conflict
from studiolo.settings import Settings
from studiolo.store import Store, migrations
from studiolo.store import schema as s
from studiolo.store.backup import BackupError, backup, restore
from studiolo.store.cli import register
from tests.store.pgdb import fresh_database, server_url
from tests.world import World, build_world

_CHANGED_BY_RESTORE = {"meta", "events", "tasks", "chains"}  # chains: ledger.restored


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def target_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A second, empty database to restore into (the source is `store_url`)."""
    if request.param == "sqlite":
        yield Settings.sqlite_url(tmp_path / "target.db")
        return
    with fresh_database(server_url()) as url:
        yield url


@pytest.fixture
def world(store_url: str, tmp_path: Path) -> Iterator[World]:
    w = build_world(tmp_path, url=store_url)
    yield w
    w.coord.store.dispose()


def _rows(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    with store.engine.connect() as conn:
        for table in s.metadata.sorted_tables:
            rows = conn.execute(select(table)).all()
            values = (tuple(bytes(v) if isinstance(v, memoryview) else v for v in r) for r in rows)
            out[table.name] = sorted(values, key=repr)
    return out


def _complete_one(w: World, path: str = "src/answer.txt") -> None:
    task = w.new_task()
    att = w.coord.claim(w.agent, task.id, 600)
    cand = w.candidate(att, {path: b"42\n"}, deps={"src/input.txt": 1})
    w.complete(task, att, cand, [w.receipt(cand).id])


def test_a_backup_restores_every_row_into_either_back_end(
    world: World, target_url: str, tmp_path: Path
) -> None:
    _complete_one(world)
    world.put(bytes(range(256)))  # a staged blob with every byte value
    file = tmp_path / "ledger.backup.gz"
    info = backup(world.coord.store, file)
    assert info.rows["completions"] == 1 and info.schema == migrations.head()

    target = Store(target_url)
    done = restore(target, file, previous=world.coord.store)  # a move: the source vouches for all
    assert done.rows == info.rows and done.previous_incarnation == "" and done.held == ()
    before, after = _rows(world.coord.store), _rows(target)
    for name in before:
        if name not in _CHANGED_BY_RESTORE:
            assert after[name] == before[name], name
    restored = [e for e in after["events"] if e[2] == "ledger.restored"]
    assert len(restored) == 1 and restored[0][0] == len(before["events"]) + 1  # the chain continues
    assert [e for e in after["events"] if e[2] != "ledger.restored"] == before["events"]
    assert target.schema_revision() == migrations.head()
    if target.dialect == "postgresql":  # analyzed: the planner knows the restored rows are there
        with target.engine.connect() as conn:
            known = conn.exec_driver_sql("SELECT reltuples FROM pg_class WHERE relname = 'events'").scalar()
        assert known is not None and known >= len(before["events"])
    target.dispose()


def test_a_restore_is_a_new_incarnation_that_rejects_pre_restore_workers(
    world: World, tmp_path: Path
) -> None:
    """SPEC §2: every lease issued before a restore is dead; no fence is ever reissued."""
    coord = world.coord
    held = world.new_task("held across the backup")
    old = coord.claim(world.agent, held.id, 3600)  # in the backup
    old_cand = world.candidate(old, {"src/answer.txt": b"42\n"}, deps={"src/input.txt": 1})
    old_receipt = world.receipt(old_cand)
    lost = world.new_task("claimed after the backup")
    file = tmp_path / "ledger.backup"
    backup(coord.store, file)
    later = coord.claim(world.agent, lost.id, 3600)  # issued after the backup: lost by the restore
    for _ in range(3):  # fences the backup never saw
        later = coord.reassign(world.admin, lost.id, world.agent.id, 3600)

    info = restore(coord.store, file)
    assert info.previous_incarnation and info.incarnation != info.previous_incarnation
    assert info.fence_floor > later.fence

    # the worker returns with pre-restore authority: rejected, nothing written
    with pytest.raises(CompletionRejected) as err:
        world.complete(held, old, old_cand, [old_receipt.id], request_id="req-old")
    assert "lease_expired" in err.value.failed
    with pytest.raises(Conflict):
        coord.heartbeat(world.agent, old.id, 60)
    with pytest.raises(CompletionRejected):
        world.complete(lost, later, old_cand, [old_receipt.id], request_id="req-lost")
    assert coord.store.read(lambda tx: tx.work.completion_of_task(held.id)) is None

    # new authority: fences continue above everything issued before, ids are new
    fresh = coord.claim(world.agent, lost.id, 3600)
    assert fresh.fence > later.fence and fresh.id not in {old.id, later.id}
    again = coord.claim(world.agent, held.id, 3600)
    assert again.fence > old.fence
    cand = world.candidate(again, {"src/answer.txt": b"42\n"}, deps={"src/input.txt": 1})
    out = world.complete(held, again, cand, [world.receipt(cand).id])
    assert out.completion.receipt["fence"] == again.fence
    report = coord.verify_audit()
    assert report.ok, report.problem


def test_restoring_the_same_backup_twice_never_reissues_a_fence(world: World, tmp_path: Path) -> None:
    task = world.new_task()
    file = tmp_path / "b.jsonl"
    backup(world.coord.store, file)
    seen = []
    for _ in range(2):
        restore(world.coord.store, file)
        seen.append(world.coord.claim(world.agent, task.id, 60).fence)
        seen.append(world.coord.reassign(world.admin, task.id, world.agent2.id, 60).fence)
    assert seen == sorted(set(seen))


def test_a_damaged_backup_is_refused_and_changes_nothing(world: World, tmp_path: Path) -> None:
    file = tmp_path / "b.jsonl"
    backup(world.coord.store, file)
    _complete_one(world)
    before = _rows(world.coord.store)
    lines = file.read_bytes().splitlines(keepends=True)
    truncated, edited = tmp_path / "t.jsonl", tmp_path / "e.jsonl"
    truncated.write_bytes(b"".join(lines[:-3]))
    at = next(i for i, line in enumerate(lines) if b'"demo"' in line)
    edited.write_bytes(b"".join([*lines[:at], lines[at].replace(b'"demo"', b'"omed"'), *lines[at + 1 :]]))
    for bad in (truncated, edited):
        with pytest.raises(BackupError):
            restore(world.coord.store, bad)
    assert _rows(world.coord.store) == before


def test_the_cli_upgrades_backs_up_and_restores(tmp_path: Path) -> None:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """studiolo"""

    register(app)
    runner = CliRunner()
    url = Settings.sqlite_url(tmp_path / "cli.db")
    up = runner.invoke(app, ["db", "upgrade", "--database-url", url])
    assert up.exit_code == 0, up.output
    assert migrations.head() in up.output
    current = runner.invoke(app, ["db", "current", "--database-url", url])
    assert current.exit_code == 0, current.output
    world = build_world(tmp_path / "w", url=url) if (tmp_path / "w").mkdir() is None else None
    assert world is not None
    _complete_one(world)
    file = tmp_path / "cli.backup"
    made = runner.invoke(app, ["backup", str(file), "--database-url", url])
    assert made.exit_code == 0, made.output
    target = Settings.sqlite_url(tmp_path / "restored.db")
    back = runner.invoke(app, ["restore", str(file), "--database-url", target, "--yes"])
    assert back.exit_code == 0, back.output
    assert "incarnation" in back.output
    refused = runner.invoke(app, ["restore", str(file), "--database-url", target], input="n\n")
    assert refused.exit_code != 0
    world.coord.store.dispose()


def test_redacted_audit_detail_survives_a_restore_and_verifies(
    store_url: str, target_url: str, tmp_path: Path
) -> None:
    """Markers and meta `detail_split` are rows like the others: the restored ledger verifies,
    on either back-end, and its markers still carry the digests the chain hashed."""
    from studiolo.service import Coordinator
    from studiolo.store.audit import REDACTED
    from tests.world import FakeClock

    clock = FakeClock()
    w = build_world(tmp_path, clock, store_url)
    _complete_one(w)
    clock.advance(3 * 86400.0)
    w.coord.set_retention(w.admin, w.project_id, {"audit_detail": 86400.0})
    (report,) = w.coord.sweep_retention(w.admin, w.project_id)
    assert report.swept["audit_detail"] > 0
    file = tmp_path / "redacted.backup"
    backup(w.coord.store, file)
    target = Store(target_url)
    restore(target, file, previous=w.coord.store)
    restored = Coordinator(target, Settings(database_url=target_url))
    assert restored.verify_audit().ok
    events = target.read(lambda tx: list(tx.audit.iter_all()))
    assert sum(REDACTED in e.data for e in events) == report.swept["audit_detail"]
    target.dispose()
    w.coord.store.dispose()
