"""The sandbox: a check runs isolated, its limits hold, its input stays read-only, nothing
of the verifier's environment leaks in, and the unsafe mode still contains honest bugs."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from studiolo.verifier.isolation import Isolation
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


def test_a_clean_run_changes_nothing(ws: Workspace, isolation: Isolation) -> None:
    script = "cat src/a.txt; echo scratch > $TMPDIR/x; ls $HOME; id -u; touch /dev/shm/s && echo shm"
    result = Sandbox(ws, Limits(timeout=10), isolation=isolation).run(_sh(script))
    assert (result.exit_code, result.timed_out) == (0, False), result.output
    assert result.output == b"hello\nx\n65534\nshm\n"
    assert ws.violations() == []
    assert list(ws.scratch.iterdir()) == []  # scratch was a tmpfs of the check's own


def test_the_timeout_kills_the_check(ws: Workspace, isolation: Isolation) -> None:
    start = time.monotonic()
    result = Sandbox(ws, Limits(timeout=0.5), isolation=isolation).run(_sh("trap '' TERM; sleep 30"))
    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - start < 5
    assert result.describe().startswith("timed out after 0.5s (every process of the check killed)")


def test_writing_into_the_tree_is_refused(ws: Workspace, isolation: Isolation) -> None:
    script = "echo pwned > src/a.txt || echo refused; echo new > b.txt || echo refused; touch /x || echo ro"
    result = Sandbox(ws, Limits(timeout=10), isolation=isolation).run(_sh(script))
    assert result.output.count(b"refused") == 2 and b"ro\n" in result.output
    assert ws.violations() == []


def test_the_file_size_limit_holds(ws: Workspace, isolation: Isolation) -> None:
    script = "head -c 2000000 /dev/zero > $TMPDIR/big; echo status $?; wc -c < $TMPDIR/big"
    result = Sandbox(ws, Limits(timeout=10, file_bytes=100_000), isolation=isolation).run(_sh(script))
    assert b"status 0" not in result.output and result.output.endswith(b"100000\n")


def test_the_cpu_limit_holds(ws: Workspace, isolation: Isolation) -> None:
    sandbox = Sandbox(ws, Limits(timeout=30, cpu_seconds=1), isolation=isolation)
    result = sandbox.run([sys.executable, "-c", "while True: pass"])
    assert not result.timed_out
    assert result.exit_code is not None and result.exit_code < 0
    assert "killed by signal SIGXCPU" in result.describe() or "SIGKILL" in result.describe()


def test_output_is_bounded_head_and_tail(ws: Workspace, isolation: Isolation) -> None:
    script = "echo FIRST; head -c 500000 /dev/zero | tr '\\0' x; echo; echo LAST"
    result = Sandbox(ws, Limits(timeout=10, log_bytes=10_000), isolation=isolation).run(_sh(script))
    assert len(result.output) < 10_200
    assert result.output.startswith(b"FIRST") and result.output.rstrip().endswith(b"LAST")
    assert b"bytes of output omitted" in result.output


def test_the_environment_is_explicit(
    ws: Workspace, isolation: Isolation, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STUDIOLO_TOKEN", "stl_secret")
    result = Sandbox(ws, Limits(timeout=10), isolation=isolation).run(_sh("env"))
    env = dict(line.split("=", 1) for line in result.output.decode().splitlines() if "=" in line)
    assert "STUDIOLO_TOKEN" not in env
    assert env["HOME"] == env["TMPDIR"] == str(ws.scratch)
    assert env["STUDIOLO_TREE"] == str(ws.tree)
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"


def test_inputs_are_read_only_and_reports_writable_only_where_made(
    ws: Workspace, isolation: Isolation
) -> None:
    sandbox = Sandbox(ws, Limits(timeout=10), isolation=isolation)
    ini = sandbox.input_file("pytest.ini", b"[pytest]\n")
    report = sandbox.report_file("junit.xml")
    script = (
        f"cat {ini}; echo x >> {ini} || echo ini-ro; echo ok > {report}; "
        f"echo y > {report.parent}/forged.xml || echo reports-closed"
    )
    result = sandbox.run(_sh(script))
    assert result.output.splitlines()[0] == b"[pytest]"
    assert b"ini-ro" in result.output and b"reports-closed" in result.output
    assert report.read_bytes() == b"ok\n" and ini.read_bytes() == b"[pytest]\n"
    assert ws.violations() == []


def test_a_workspace_is_removed_whatever_was_left(tmp_path: Path) -> None:
    with Workspace(tmp_path) as workspace:
        (workspace.tree / "d").mkdir()
        (workspace.tree / "d" / "f").write_text("x")
        workspace.seal()
        os.chmod(workspace.scratch, 0o000)
        root = workspace.root
    assert not root.exists()


# Without isolation (--unsafe-no-isolation): containment of honest bugs only. ----------


def test_unisolated_the_timeout_kills_the_process_group(ws: Workspace, tmp_path: Path) -> None:
    marker = tmp_path / "grandchild-alive"
    script = f"(trap '' TERM; sleep 1; touch {marker}) & sleep 30"
    result = Sandbox(ws, Limits(timeout=0.5), isolation=None).run(_sh(script))
    assert result.timed_out and result.exit_code is None
    time.sleep(1.5)
    assert not marker.exists(), "a grandchild outlived the check"


def test_unisolated_writes_into_the_tree_are_refused_or_detected(ws: Workspace) -> None:
    result = Sandbox(ws, Limits(timeout=10), isolation=None).run(_sh("echo pwned > src/a.txt"))
    if os.geteuid() != 0:
        assert result.exit_code != 0  # permissions refused the writes
        assert ws.violations() == []
    else:
        assert ws.violations() == ["the candidate tree changed (files written, removed or altered)"]


def test_unisolated_memory_is_an_address_space_limit(ws: Workspace) -> None:
    code = "b = bytearray(1 << 30); print('allocated')"
    sandbox = Sandbox(ws, Limits(timeout=30, memory_bytes=256 * 1024 * 1024), isolation=None)
    result = sandbox.run([sys.executable, "-c", code])
    assert result.exit_code != 0
    assert b"MemoryError" in result.output
    assert sandbox.describe().startswith("NOT isolated")
