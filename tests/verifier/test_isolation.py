"""Issue 9, critical finding: candidate code run by a checker must not reach the runner.

One test per finding of the red team. Each would fail on the unisolated sandbox (a check
ran as the verifier's user, in the verifier's PID, mount and network namespaces, under
per-process limits only)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from typer.testing import CliRunner

from studiolo.core.canonical import digest_bytes
from studiolo.core.model import ReceiptResult
from studiolo.verifier import InProcessPort, Runner
from studiolo.verifier.cli import register
from studiolo.verifier.isolation import Isolation, IsolationUnavailable
from studiolo.verifier.sandbox import Limits, Sandbox, Workspace
from tests.verifier.conftest import MakeRunner, admit
from tests.world import World

_MIB = 1024 * 1024


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    with Workspace(tmp_path) as workspace:
        (workspace.tree / "a.txt").write_text("a\n")
        workspace.seal()
        yield workspace


def _py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


# Executed inside the check: everything it can find of the runner. Prints what leaked.
_SNOOP = """
import os, sys
secret, key, ledger, cwd, runner_pid, toolchain = sys.argv[1:7]
secret = secret[::-1]  # our own cmdline holds it reversed
found = []
for path in (key, ledger, os.path.join(cwd, "pyproject.toml")):
    try:
        open(path, "rb").read(1)
        found.append("read " + path)
    except OSError:
        pass
if os.path.isdir(cwd):
    seen = {os.path.join(cwd, name) for name in os.listdir(cwd)} - set(toolchain.split(":"))
    if seen:
        found.append(f"sees the runner's files in its cwd: {sorted(seen)[:5]}")
for pid in os.listdir("/proc"):
    for what in ("environ", "cmdline"):
        try:
            if secret.encode() in open(f"/proc/{pid}/{what}", "rb").read():
                found.append(f"/proc/{pid}/{what} holds the token")
        except OSError:
            pass
if os.path.exists(f"/proc/{runner_pid}") and runner_pid != "1":
    found.append("sees the runner's /proc entry")
if os.getuid() == 0 or os.access("/usr", os.W_OK):
    found.append("runs as root")
print("\\n".join(found) or "nothing of the runner is reachable")
sys.exit(1 if found else 0)
"""


def test_checker_cannot_read_the_runners_key_token_env_cwd_or_ledger(
    world: World, make_runner: MakeRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "stl_red_team_" + os.urandom(8).hex()
    monkeypatch.setenv("STUDIOLO_TOKEN", secret)
    key = tmp_path / "verifier.key"
    key.write_bytes(world.verifier_key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    key.chmod(0o600)
    ledger = world.coord.store.url.removeprefix("sqlite:///")
    assert Path(ledger).is_file()
    toolchain = ":".join(map(str, make_runner().isolation.toolchain))  # type: ignore[union-attr]
    argv = [*_py(_SNOOP), secret[::-1], str(key), ledger, os.getcwd(), str(os.getpid()), toolchain]
    checker = admit(world, "snoop", "command", {"argv": argv})
    task = world.new_task(criteria={"tests": checker})
    attempt = world.coord.claim(world.agent, task.id)
    world.candidate(attempt, {"src/answer.txt": b"42\n"})
    [report] = make_runner().run_once()
    receipt = world.coord.receipt(world.agent, report.receipt_id or "")
    log = world.coord.get_blob(world.agent, receipt.log_digest or "").decode()
    assert report.status == "pass", log
    assert "nothing of the runner is reachable" in log


def test_runners_proc_is_invisible(ws: Workspace, isolation: Isolation) -> None:
    code = (
        "import os; pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit()); "
        "print(pids, open('/proc/1/cmdline','rb').read().split(b'\\0')[0])"
    )
    result = Sandbox(ws, Limits(timeout=10), isolation=isolation).run(_py(code))
    assert result.exit_code == 0, result.output
    pids, _ = result.output.decode().split("] ", 1)
    assert max(int(p) for p in pids.strip("[").split(",")) < 10  # only the check's own few
    assert str(os.getpid()) not in pids.split(", ")
    assert b"bwrap" in result.output  # pid 1 is the sandbox's own init


def _alive(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and token.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
    return found


def test_setsid_double_forked_daemon_does_not_survive_the_check(ws: Workspace, isolation: Isolation) -> None:
    token = "daemon-" + os.urandom(6).hex()
    daemon = f"{sys.executable} -c 'import time; time.sleep(60)' {token}"
    script = f"( setsid {daemon} > /dev/null 2>&1 & ) ; sleep 0.2; exit 0"
    try:
        result = Sandbox(ws, Limits(timeout=10), isolation=isolation).run(["/bin/sh", "-c", script])
        assert result.exit_code == 0
        deadline = time.monotonic() + 2
        while _alive(token) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _alive(token) == [], "a setsid daemon outlived its check"
    finally:
        for pid in _alive(token):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def listener() -> Iterator[int]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


def test_network_is_refused_by_default(ws: Workspace, isolation: Isolation, listener: int) -> None:
    code = (
        "import socket, sys\ntry:\n"
        f"    socket.create_connection(('127.0.0.1', {listener}), timeout=3); print('connected')\n"
        "except OSError as e:\n    print('refused', e); sys.exit(1)"
    )
    sandbox = Sandbox(ws, Limits(timeout=10), isolation=isolation)
    refused = sandbox.run(_py(code))
    assert refused.exit_code == 1 and b"refused" in refused.output
    allowed = sandbox.run(_py(code), network=True)  # the checker's config asked for it
    assert allowed.exit_code == 0 and b"connected" in allowed.output
    assert (refused.network, allowed.network) == (False, True)


_HOG = "b = b'x' * (300 << 20); import time; time.sleep(1.5); print('held 300 MB')"
_FOUR_HOGS = f"""
import subprocess, sys
procs = [subprocess.Popen([sys.executable, "-c", {_HOG!r}]) for _ in range(4)]
codes = [p.wait() for p in procs]
print(codes)
sys.exit(0 if codes == [0, 0, 0, 0] else 1)
"""


def test_memory_limit_holds_across_four_processes(ws: Workspace, isolation: Isolation) -> None:
    limits = Limits(timeout=30, memory_bytes=512 * _MIB)
    result = Sandbox(ws, limits, isolation=isolation).run(_py(_FOUR_HOGS))
    assert result.exit_code != 0, result.output
    assert result.limits_hit == ("memory",)
    assert "the check's memory limit was reached" in result.describe()


_SPAWN = """
import subprocess, sys
procs = []
try:
    for _ in range(40):
        procs.append(subprocess.Popen(["sleep", "5"]))
except OSError as e:
    print("refused after", len(procs), e); sys.exit(1)
print("started", len(procs))
"""


def test_process_count_limit_is_per_check(ws: Workspace, isolation: Isolation) -> None:
    result = Sandbox(ws, Limits(timeout=30, processes=16), isolation=isolation).run(_py(_SPAWN))
    assert result.exit_code == 1 and b"refused after" in result.output, result.output
    assert result.limits_hit == ("processes",)


def test_scratch_disk_is_limited_per_check(ws: Workspace, isolation: Isolation) -> None:
    script = "for i in 1 2 3 4; do head -c 600000 /dev/zero > $TMPDIR/f$i || exit 1; done"
    limits = Limits(timeout=10, scratch_bytes=_MIB, file_bytes=10 * _MIB)
    result = Sandbox(ws, limits, isolation=isolation).run(["/bin/sh", "-c", script])
    assert result.exit_code == 1 and b"No space left on device" in result.output


def test_duplicated_blob_tree_is_refused_under_the_disk_cap(
    world: World, make_runner: MakeRunner, tmp_path: Path
) -> None:
    blob = os.urandom(256 * 1024)
    task = world.new_task()
    attempt = world.coord.claim(world.agent, task.id)
    cand = world.candidate(attempt, {f"src/copy{i:03}.bin": blob for i in range(100)})  # 25.6 MB
    workdir = tmp_path / "capped"
    workdir.mkdir()
    [report] = make_runner(limits=Limits(timeout=30, tree_bytes=4 * _MIB), workdir=workdir).run_once()
    assert report.status == "fail" and "more than 4194304 bytes" in report.summary
    assert [r.result for r in world.coord.receipts(world.agent, cand.id)] == [ReceiptResult.FAIL]
    assert list(workdir.iterdir()) == []  # written nothing (and removed the workspace)
    assert digest_bytes(blob) in {
        e.digest for e in world.coord.candidate_tree(world.verifier, cand.id).entries
    }


def test_runner_refuses_without_isolation_unless_unsafe(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(IsolationUnavailable, match="cannot make the namespaces"):
        Isolation.probe(bwrap="/bin/false")
    monkeypatch.setattr("studiolo.verifier.isolation.shutil.which", lambda *_a, **_k: None)
    port = InProcessPort(world.coord, world.verifier, world.project_id)
    with pytest.raises(IsolationUnavailable, match="bwrap"):
        Runner(port, world.verifier_key)

    main = typer.Typer()
    main.callback()(lambda: None)
    register(main)
    task = world.new_task()
    world.candidate(world.coord.claim(world.agent, task.id), {"src/answer.txt": b"42\n"})
    key = tmp_path / "ci.key"
    key.write_bytes(world.verifier_key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    key.chmod(0o600)
    env = {
        "STUDIOLO_DATABASE_URL": world.coord.store.url,
        "STUDIOLO_TOKEN": world.coord.rotate_token(world.admin, world.verifier.id).token,
        "STUDIOLO_CONFIG": "/nonexistent",
    }
    args = ["verifier", "run", "--once", "--embedded", "--key", str(key), "--workdir", str(tmp_path)]
    refused = CliRunner().invoke(main, args, env=env)
    assert refused.exit_code == 2, refused.output
    assert "cannot isolate checks: bubblewrap (bwrap) is not installed" in refused.output
    assert "--unsafe-no-isolation" in refused.output
    assert (
        world.coord.receipts(
            world.agent, world.coord.verification_queue(world.verifier, world.project_id)[0].candidate_id
        )
        == []
    )
    unsafe = CliRunner().invoke(main, [*args, "--unsafe-no-isolation"], env=env)
    assert unsafe.exit_code == 0, unsafe.output
    assert "checks are NOT isolated" in unsafe.output and "pass    " in unsafe.output


def test_each_run_gets_its_own_cgroup_and_it_is_removed(ws: Workspace, isolation: Isolation) -> None:
    parents = isolation.cgroups.parents
    assert set(parents) == {"memory", "pids"}, isolation.cgroups.describe()

    def leftovers() -> list[Path]:
        return [d for p in parents.values() for d in p.glob("studiolo-check-*")]

    before = leftovers()
    script = "cat /proc/self/cgroup; sleep 30 & sleep 30 & exit 0"
    result = Sandbox(ws, Limits(timeout=10), isolation=isolation).run(["/bin/sh", "-c", script])
    assert result.exit_code == 0
    assert leftovers() == before


@pytest.mark.skipif(os.geteuid() != 0, reason="the uid drop is what a root verifier does")
def test_checker_cannot_read_files_only_root_can_read(tmp_path: Path, isolation: Isolation) -> None:
    with Workspace(tmp_path) as workspace:
        (workspace.tree / "root-only.txt").write_text("secret\n")
        workspace.seal()
        (workspace.tree / "root-only.txt").chmod(0o400)  # root's, mode 0400, mounted in the check
        script = "id -u; cat root-only.txt || echo unreadable; echo x > /usr/x || echo usr-ro"
        result = Sandbox(workspace, Limits(timeout=10), isolation=isolation).run(["/bin/sh", "-c", script])
    assert result.output.splitlines()[0] == b"65534"
    assert b"secret" not in result.output and b"Permission denied" in result.output
    assert b"unreadable" in result.output and b"usr-ro" in result.output


def test_only_named_toolchain_directories_are_added_to_the_view(ws: Workspace, tmp_path: Path) -> None:
    tools = tmp_path / "opt-tools"
    tools.mkdir()
    (tools / "tool.sh").write_text("echo tool ran\n")
    (tools / "tool.sh").chmod(0o755)
    script = f"/bin/sh {tools}/tool.sh || echo missing"
    for extra, expected in (((), b"missing"), ((tools,), b"tool ran")):
        isolation = Isolation.probe(extra_toolchain=extra)
        result = Sandbox(ws, Limits(timeout=10), isolation=isolation).run(["/bin/sh", "-c", script])
        assert expected in result.output, result.output
    with pytest.raises(IsolationUnavailable, match="not an absolute directory"):
        Isolation.probe(extra_toolchain=[tmp_path / "nope"])
