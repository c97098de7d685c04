"""Finding: the ledger and its backups were world-readable and hold the service signing key.

`studiolo.db*` and backup files were 0644 and uid `nobody` read `meta.service_key`. Now the
ledger file (and so its -wal and -shm), backups, and the demo's state are 0600, and a
directory Studiolo creates for them is 0700. The read attempt as `nobody` is real.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from studiolo.faces.cli import app
from studiolo.faces.cli.ledger import _prepare_demo
from studiolo.service import Coordinator
from studiolo.settings import Settings
from studiolo.store import Store
from studiolo.store.backup import backup

NOBODY = 65534


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory every user may enter (pytest's tmp_path is private to root, which would
    make any read by `nobody` fail for the wrong reason)."""
    where = Path(tempfile.mkdtemp(prefix="studiolo-modes-"))
    where.chmod(0o755)
    try:
        yield where
    finally:
        shutil.rmtree(where)


@pytest.fixture
def live_ledger(shared_dir: Path) -> Iterator[tuple[Coordinator, Path]]:
    """An initialized SQLite ledger with its connections still open (so -wal/-shm exist)."""
    db = shared_dir / "studiolo.db"
    coord = Coordinator(Store(Settings.sqlite_url(db)), Settings(database_url=Settings.sqlite_url(db)))
    assert coord.initialize() is not None
    yield coord, db
    coord.store.dispose()


def test_the_ledger_and_its_wal_and_shm_are_created_0600(live_ledger: tuple[Coordinator, Path]) -> None:
    _, db = live_ledger
    files = [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]
    assert {f.name: _mode(f) for f in files} == {f.name: 0o600 for f in files}


def test_init_creates_a_missing_ledger_directory_0700(tmp_path: Path) -> None:
    db = tmp_path / "new" / "dir" / "studiolo.db"
    result = CliRunner().invoke(app, ["init", "--database-url", Settings.sqlite_url(db), "--json"])
    assert result.exit_code == 0, result.output
    assert _mode(db.parent) == 0o700 and _mode(db.parent.parent) == 0o700
    assert _mode(db) == 0o600


def test_a_backup_file_is_0600(live_ledger: tuple[Coordinator, Path]) -> None:
    coord, db = live_ledger
    for name in ("ledger.backup", "ledger.backup.gz"):
        backup(coord.store, db.with_name(name))
        assert _mode(db.with_name(name)) == 0o600


def test_run_keeps_the_demo_tokens_and_verifier_key_private(shared_dir: Path) -> None:
    state_dir = shared_dir / ".studiolo"
    fresh = shared_dir / "demo.db"
    demo = Coordinator(Store(Settings.sqlite_url(fresh)), Settings(database_url=Settings.sqlite_url(fresh)))
    try:
        saved = _prepare_demo(demo, demo.settings, state_dir)
    finally:
        demo.store.dispose()
    assert _mode(state_dir) == 0o700
    assert _mode(state_dir / "demo-tokens.json") == 0o600
    assert _mode(Path(saved["verifier_key_file"])) == 0o600
    assert _mode(fresh) == 0o600


@pytest.mark.skipif(os.geteuid() != 0, reason="reading as uid nobody needs root to switch users")
def test_uid_nobody_cannot_read_the_ledger_or_a_backup(live_ledger: tuple[Coordinator, Path]) -> None:
    coord, db = live_ledger
    backup(coord.store, db.with_name("ledger.backup"))
    control = db.with_name("public.txt")
    control.write_text("anyone may read this\n")
    control.chmod(0o644)

    def read_as_nobody(path: Path) -> subprocess.CompletedProcess[bytes]:
        cat = shutil.which("cat") or "/bin/cat"
        return subprocess.run(
            [cat, str(path)], user=NOBODY, group=NOBODY, extra_groups=[], capture_output=True, check=False
        )

    assert read_as_nobody(control).returncode == 0  # the setup lets nobody read what is public
    for name in ("studiolo.db", "studiolo.db-wal", "studiolo.db-shm", "ledger.backup"):
        denied = read_as_nobody(db.with_name(name))
        assert denied.returncode != 0 and b"Permission denied" in denied.stderr, name
