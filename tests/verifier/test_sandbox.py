"""The sandbox: timeouts kill the whole process group, limits hold, the input stays read-only
(or its change is detected), and nothing of the verifier's environment leaks in."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from studiolo.verifier.sandbox import Limits, Sandbox, Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path)
    (workspace.tree / "src").mkdir()
    (workspace.tree / "src" / "a.txt").write_text("hello\n")
    workspace.seal()
    return workspace


def _sh(script: str) -> list[str]:
    return ["/bin/sh", "-c", script]


def test_a_clean_run_changes_nothing(ws: Workspace) -> None:
    result = Sandbox(ws, Limits(timeout=10)).run(_sh("cat src/a.txt; echo scratch > $TMPDIR/x; ls $HOME"))
    assert (result.exit_code, result.timed_out) == (0, False)
    assert result.output == b"hello\nx\n"
    assert ws.violations() == []


def test_the_timeout_kills_the_whole_process_group(ws: Workspace, tmp_path: Path) -> None:
    marker = tmp_path / "grandchild-alive"
    script = f"(trap '' TERM; sleep 1; touch {marker}) & sleep 30"
    start = time.monotonic()
    result = Sandbox(ws, Limits(timeout=0.5)).run(_sh(script))
    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - start < 5
    assert "timed out" in result.describe()
    time.sleep(1.5)
    assert not marker.exists(), "a grandchild outlived the check"


def test_background_children_are_killed_after_a_normal_exit(ws: Workspace, tmp_path: Path) -> None:
    marker = tmp_path / "left-behind"
    result = Sandbox(ws, Limits(timeout=10)).run(_sh(f"(sleep 1; touch {marker}) & exit 0"))
    assert result.exit_code == 0
    time.sleep(1.5)
    assert not marker.exists()


def test_writing_into_the_tree_is_refused_or_detected(ws: Workspace) -> None:
    result = Sandbox(ws, Limits(timeout=10)).run(_sh("echo pwned > src/a.txt; echo new > b.txt"))
    if os.geteuid() != 0:
        assert result.exit_code != 0  # permissions refused the writes
        assert ws.violations() == []
    else:
        assert ws.violations() == ["the candidate tree changed (files written, removed or altered)"]


def test_writing_next_to_the_tree_is_detected(ws: Workspace) -> None:
    Sandbox(ws, Limits(timeout=10)).run(_sh("echo x > ../escaped.txt"))
    if os.geteuid() == 0:
        assert ws.violations() == ["new entries next to the tree: ['escaped.txt']"]
    else:
        assert ws.violations() == []


def test_the_file_size_limit_holds(ws: Workspace) -> None:
    script = "head -c 2000000 /dev/zero > $TMPDIR/big; echo status $?"
    result = Sandbox(ws, Limits(timeout=10, file_bytes=100_000)).run(_sh(script))
    assert (ws.scratch / "big").stat().st_size <= 100_000
    assert result.exit_code != 0 or b"status 0" not in result.output


def test_the_cpu_limit_holds(ws: Workspace) -> None:
    result = Sandbox(ws, Limits(timeout=30, cpu_seconds=1)).run([sys.executable, "-c", "while True: pass"])
    assert not result.timed_out
    assert result.exit_code is not None and result.exit_code < 0
    assert "killed by signal SIGXCPU" in result.describe() or "SIGKILL" in result.describe()


def test_the_memory_limit_holds(ws: Workspace) -> None:
    code = "b = bytearray(1 << 30); print('allocated')"
    result = Sandbox(ws, Limits(timeout=30, memory_bytes=256 * 1024 * 1024)).run([sys.executable, "-c", code])
    assert result.exit_code != 0
    assert b"MemoryError" in result.output


def test_output_is_bounded_head_and_tail(ws: Workspace) -> None:
    script = "echo FIRST; head -c 500000 /dev/zero | tr '\\0' x; echo; echo LAST"
    result = Sandbox(ws, Limits(timeout=10, log_bytes=10_000)).run(_sh(script))
    assert len(result.output) < 10_200
    assert result.output.startswith(b"FIRST") and result.output.rstrip().endswith(b"LAST")
    assert b"bytes of output omitted" in result.output


def test_the_environment_is_explicit(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STUDIOLO_TOKEN", "stl_secret")
    result = Sandbox(ws, Limits(timeout=10)).run(_sh("env"))
    env = dict(line.split("=", 1) for line in result.output.decode().splitlines() if "=" in line)
    assert "STUDIOLO_TOKEN" not in env
    assert env["HOME"] == env["TMPDIR"] == str(ws.scratch)
    assert env["STUDIOLO_TREE"] == str(ws.tree)
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"


def test_a_workspace_is_removed_whatever_was_left(tmp_path: Path) -> None:
    with Workspace(tmp_path) as workspace:
        (workspace.tree / "d").mkdir()
        (workspace.tree / "d" / "f").write_text("x")
        workspace.seal()
        os.chmod(workspace.scratch, 0o000)
        root = workspace.root
    assert not root.exists()
