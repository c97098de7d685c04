"""Mirrors: every publication pushed to another remote (here `git daemon` on loopback); a
mirror that is down shows its error and catches up when it is back."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import pytest

from studiolo._exceptions import InvalidRequest
from studiolo.git.repository import BRANCH, CHECKPOINTS
from studiolo.git.status import add_mirror, git_status
from tests.git.helpers import projector_for
from tests.git.repos import git
from tests.world import World


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _daemon(base: Path, port: int) -> subprocess.Popen[bytes]:
    # git-daemon itself, not `git daemon` (a wrapper that forks it): killing the wrapper
    # would leave the daemon listening after the test
    exec_path = subprocess.run(
        ["git", "--exec-path"], capture_output=True, text=True, check=True
    ).stdout.strip()
    daemon = str(Path(exec_path) / "git-daemon")
    args = [daemon, "--reuseaddr", "--export-all", "--enable=receive-pack", f"--base-path={base}"]
    proc = subprocess.Popen([*args, "--listen=127.0.0.1", f"--port={port}", str(base)])
    for _ in range(100):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("git daemon did not start")


def test_a_mirror_that_is_down_catches_up(world: World, tmp_path: Path) -> None:
    w, root, port = world, tmp_path / "git", _port()
    projector = projector_for(w, root)
    projector.run_once()
    url = f"git://127.0.0.1:{port}/mirror.git"
    mirror = add_mirror(w.coord, w.admin, w.project_id, root, url)
    repo = projector.repo(w.project_id)
    projector.mirrors.push(repo)  # nothing listens there yet
    down = git_status(w.coord, w.admin, w.project_id, root).mirrors[0]
    assert down.error and down.pushed is None and down.name == mirror.name
    base = tmp_path / "remote"
    base.mkdir()
    git(base, "init", "-q", "--bare", "mirror.git")
    daemon = _daemon(base, port)
    try:
        w.edit("docs/more.md", b"more\n")
        projector.run_once()  # within the backoff: not tried again yet
        projector.mirrors.push(repo, now=time.monotonic() + 120)  # the backoff has passed
    finally:
        daemon.kill()
        daemon.wait()
    up = git_status(w.coord, w.admin, w.project_id, root).mirrors[0]
    tip, version = repo.tip(BRANCH)
    assert up.error is None and up.pushed == str(tip) and up.pushed_version == version
    assert git(base / "mirror.git", "rev-parse", "refs/heads/main") == str(tip)
    assert git(base / "mirror.git", "rev-parse", CHECKPOINTS) == str(repo.tip(CHECKPOINTS)[0])
    events = w.coord.store.read(lambda tx: tx.audit.latest(w.project_id, 5))
    assert "git.mirror_added" in {e.kind for e in events}


def test_a_local_path_is_a_service_admins_only(world: World, tmp_path: Path) -> None:
    w = world
    w.coord.grant(w.admin, w.project_id, w.human.id, ["admin"], ["**"])
    with pytest.raises(InvalidRequest):
        add_mirror(w.coord, w.human, w.project_id, tmp_path / "git", str(tmp_path / "elsewhere.git"))
