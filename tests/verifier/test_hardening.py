"""Issue 32, findings 6–8: a check's keyring, nested user namespaces, private trees.

Each test fails on the sandbox before the fix: checks shared uid 65534's kernel keyring,
could create user namespaces, and their trees were 0555/0444 for every local user and
outlived a killed verifier."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from studiolo.verifier.isolation import Isolation, View
from studiolo.verifier.sandbox import Limits, Sandbox, Workspace
from tests.verifier.conftest import MakeRunner

_KEYS = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
USER_KEYRING = ctypes.c_long(-4)
if sys.argv[1] == "add":
    r = libc.syscall(248, b"user", b"studiolo-left-behind", b"secret", 6, USER_KEYRING)  # add_key
else:
    r = libc.syscall(250, 10, USER_KEYRING, b"user", b"studiolo-left-behind", 0)  # keyctl search
    libc.syscall(250, 7, USER_KEYRING)  # keyctl clear: leave nothing behind either way
print(sys.argv[1], r, os.strerror(ctypes.get_errno()) if r < 0 else "ok")
"""


def _run(ws: Workspace, isolation: Isolation, argv: list[str]) -> str:
    result = Sandbox(ws, Limits(timeout=30.0), isolation=isolation).run(argv)
    return result.output.decode()


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path)
    (workspace.tree / "secret.txt").write_text("candidate bytes\n")
    workspace.seal()
    return workspace


def test_a_check_cannot_reach_a_keyring_another_check_shares(ws: Workspace, isolation: Isolation) -> None:
    with ws:
        added = _run(ws, isolation, [sys.executable, "-c", _KEYS, "add"])
        found = _run(ws, isolation, [sys.executable, "-c", _KEYS, "search"])
    assert added.startswith("add -1 Operation not permitted"), added
    assert found.startswith("search -1"), f"a later check found the key: {found}"


def test_a_check_cannot_make_a_user_namespace(ws: Workspace, isolation: Isolation) -> None:
    code = (
        "import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); "
        "r = libc.unshare(0x10000000); print(r, os.strerror(ctypes.get_errno()))"
    )
    with ws:
        direct = _run(ws, isolation, [sys.executable, "-c", code])
        tool = _run(ws, isolation, ["/usr/bin/unshare", "--user", "--map-root-user", "/bin/true"])
    assert direct.startswith("-1 Operation not permitted"), direct
    assert "Operation not permitted" in tool, tool
    assert "no new user namespaces" in Sandbox(ws, Limits(), isolation=isolation).describe()


def test_another_local_user_cannot_read_a_tree_being_checked(ws: Workspace) -> None:
    with ws:
        assert ws.root.stat().st_mode & 0o077 == 0
        if os.geteuid() != 0:
            pytest.skip("reading as another uid needs root")
        peek = subprocess.run(
            [
                "/usr/bin/setpriv",
                "--reuid=4242",
                "--regid=4242",
                "--clear-groups",
                "/bin/cat",
                str(ws.tree / "secret.txt"),
            ],
            capture_output=True,
        )
    assert peek.returncode != 0 and b"candidate bytes" not in peek.stdout
    assert b"Permission denied" in peek.stderr


_KILLED_MID_CHECK = """
import os, sys
from pathlib import Path
from studiolo.verifier.sandbox import Workspace
ws = Workspace(Path(sys.argv[1]))
(ws.tree / "f.txt").write_text("x")
ws.seal()
print(ws.root, flush=True)
os.kill(os.getpid(), 9)
"""


def test_trees_left_by_a_killed_verifier_are_removed_when_a_runner_starts(
    make_runner: MakeRunner, tmp_path: Path
) -> None:
    workdir = tmp_path / "verifier-work"
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_MID_CHECK, str(workdir)], capture_output=True, text=True
    )
    assert done.returncode == -signal.SIGKILL
    stale = Path(done.stdout.strip())
    assert (stale / "tree" / "f.txt").is_file()
    # unlocked but young: perhaps the check of an older verifier that takes no lock
    fresh = Path(tempfile.mkdtemp(prefix=Workspace.PREFIX, dir=workdir))
    long_ago = (1_000_000, 1_000_000)
    os.utime(stale, long_ago)
    with Workspace(workdir) as live:  # a check in progress elsewhere is left alone, however old
        os.utime(live.root, long_ago)
        make_runner()
        assert not stale.exists()
        assert live.root.is_dir() and fresh.is_dir()


def test_a_verifier_that_is_not_root_also_disables_nested_user_namespaces(
    isolation: Isolation, tmp_path: Path
) -> None:
    """As another user the check keeps the verifier's uid in a user namespace of its own:
    bubblewrap's `--disable-userns` forbids a nested one (on top of the seccomp filter)."""
    unprivileged = dataclasses.replace(isolation, uid=None, gid=None, disable_userns=True)
    view = View(tmp_path, tmp_path / "s", tmp_path, tmp_path, None)
    argv = unprivileged.wrap(["true"], view, seccomp_fd=7)
    assert {"--unshare-user", "--disable-userns"} <= set(argv)
    assert argv[argv.index("--seccomp") + 1] == "7"
    assert "nested user namespaces disabled" in unprivileged.describe()


def test_the_filter_exists_only_for_architectures_it_knows() -> None:
    from studiolo.verifier import seccomp

    program = seccomp.program("x86_64")
    assert program is not None and len(program) % 8 == 0
    assert seccomp.program("riscv64") is None
