"""Run a checker's process: fresh workspace, read-only input, timeout, resource limits.

A `Workspace` is a new temporary directory holding `tree/` (the candidate, sealed
read-only), `scratch/` (the only place a checker is meant to write: `$HOME`, `$TMPDIR`,
`$STUDIOLO_SCRATCH`) and `output.log`. `Sandbox.run` starts a process in its own session
with POSIX resource limits, kills the whole process group on timeout (and after every
run), and never lets the checker's output grow without bound.

This is containment for honest-but-buggy checkers, not a security boundary. Permissions
stop a non-root checker from writing into the tree; root ignores permission bits, so the
runner also compares the tree's digest (and the workspace's listing) before and after.
Writes anywhere else are stopped only by the operating system: give `Limits.run_as` an
unprivileged uid/gid (a root verifier then runs checkers as that user), or run the
verifier as a dedicated user or in a container when checkers may be hostile.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from studiolo.verifier.tree import remove_tree, tree_digest

__all__ = ["Limits", "ProcessResult", "Sandbox", "Workspace"]

_GIB = 1024**3
_MIB = 1024**2


@dataclass(frozen=True)
class Limits:
    """Ceilings for one check. `None` leaves a resource at the verifier's own limit."""

    timeout: float = 300.0  # wall clock, seconds; a checker's config may ask for less, never more
    cpu_seconds: int | None = None  # default: the timeout, rounded up, plus one second
    memory_bytes: int | None = 2 * _GIB  # address space (RLIMIT_AS)
    file_bytes: int | None = 256 * _MIB  # largest file the checker may write (RLIMIT_FSIZE)
    processes: int | None = 1024  # RLIMIT_NPROC: counts *all* processes of the user; root ignores it
    log_bytes: int = 1 * _MIB  # output kept in the log (the head and the tail)
    run_as: tuple[int, int] | None = None  # (uid, gid) for checker processes; the verifier must be root

    def effective_timeout(self, requested: float | None = None) -> float:
        return self.timeout if requested is None else min(requested, self.timeout)


@dataclass(frozen=True)
class ProcessResult:
    argv: tuple[str, ...]
    exit_code: int | None  # None when killed for the timeout
    timed_out: bool
    output: bytes  # stdout and stderr, interleaved, truncated to `Limits.log_bytes`
    seconds: float

    def describe(self) -> str:
        if self.timed_out:
            return f"timed out after {self.seconds:.1f}s (process group killed)"
        code = self.exit_code
        if code is not None and code < 0:
            return f"killed by signal {signal.Signals(-code).name}"
        return f"exit code {code}"


class Workspace:
    """A fresh temporary directory for one check; removed on exit, whatever the checker did."""

    _EXPECTED = frozenset({"tree", "scratch", "output.log"})

    def __init__(self, parent: Path | None = None) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="studiolo-verify-", dir=parent))
        self.tree = self.root / "tree"
        self.scratch = self.root / "scratch"
        self.output = self.root / "output.log"
        self.tree.mkdir()
        self.scratch.mkdir(mode=0o700)
        self.output.touch(mode=0o600)
        self._sealed_digest: str | None = None

    def seal(self) -> str:
        """Make the tree and the workspace root read-only; remember the tree's digest."""
        for dirpath, _dirnames, filenames in os.walk(self.tree, topdown=False):
            for name in filenames:
                os.chmod(os.path.join(dirpath, name), 0o444)
            os.chmod(dirpath, 0o555)
        os.chmod(self.root, 0o555)
        self._sealed_digest = tree_digest(self.tree)
        return self._sealed_digest

    def violations(self) -> list[str]:
        """What the checker changed outside its scratch directory (empty: nothing)."""
        found = []
        if self._sealed_digest is not None and tree_digest(self.tree) != self._sealed_digest:
            found.append("the candidate tree changed (files written, removed or altered)")
        extra = sorted({p.name for p in self.root.iterdir()} - self._EXPECTED)
        if extra:
            found.append(f"new entries next to the tree: {extra[:10]}")
        return found

    def __enter__(self) -> Workspace:
        return self

    def __exit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None
    ) -> None:
        remove_tree(self.root)


class Sandbox:
    """Runs commands for one check inside a `Workspace`, under `Limits`."""

    def __init__(self, workspace: Workspace, limits: Limits) -> None:
        self.workspace = workspace
        self.limits = limits

    @property
    def tree(self) -> Path:
        return self.workspace.tree

    @property
    def scratch(self) -> Path:
        return self.workspace.scratch

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """A small, explicit environment: nothing of the verifier's own (tokens, keys) leaks in."""
        scratch = str(self.scratch)
        env = {
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
            "HOME": scratch,
            "TMPDIR": scratch,
            "STUDIOLO_SCRATCH": scratch,
            "STUDIOLO_TREE": str(self.tree),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONNOUSERSITE": "1",
            "PYTHONHASHSEED": "0",
        }
        env.update(extra or {})
        return env

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ProcessResult:
        """Run `argv` with cwd = the read-only tree; kill its process group when done."""
        wall = self.limits.effective_timeout(timeout)
        if self.limits.run_as is not None:
            os.chown(self.scratch, *self.limits.run_as)
        start = time.monotonic()
        with open(self.workspace.output, "wb") as out:
            proc = subprocess.Popen(
                list(argv),
                cwd=self.tree,
                env=self.env(env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_rlimits(self.limits, wall),
                close_fds=True,
            )
            timed_out = False
            try:
                code: int | None = proc.wait(timeout=wall)
            except subprocess.TimeoutExpired:
                timed_out, code = True, None
            _kill_group(proc.pid)
            proc.wait()
        output = _read_bounded(self.workspace.output, self.limits.log_bytes)
        return ProcessResult(tuple(argv), code, timed_out, output, time.monotonic() - start)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _rlimits(limits: Limits, wall: float) -> Callable[[], None]:
    """Compute the limits in the parent; the child only calls setrlimit (fork-safe)."""
    cpu = limits.cpu_seconds if limits.cpu_seconds is not None else int(wall) + 1
    wanted: list[tuple[int, int | None]] = [
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_AS, limits.memory_bytes),
        (resource.RLIMIT_FSIZE, limits.file_bytes),
        (resource.RLIMIT_NPROC, limits.processes),
        (resource.RLIMIT_CORE, 0),
    ]
    settings = [(res, _pair(res, value)) for res, value in wanted if value is not None]

    run_as = limits.run_as

    def apply() -> None:
        for res, pair in settings:
            resource.setrlimit(res, pair)
        if run_as is not None:
            os.setgroups([])
            os.setgid(run_as[1])
            os.setuid(run_as[0])

    return apply


def _pair(res: int, value: int) -> tuple[int, int]:
    """(soft, hard), never above the verifier's own hard limit. CPU gets one second of
    grace between the soft limit (SIGXCPU) and the hard one (SIGKILL)."""
    _soft, hard = resource.getrlimit(res)

    def cap(v: int) -> int:
        return v if hard == resource.RLIM_INFINITY else min(v, hard)

    return (cap(value), cap(value + 1 if res == resource.RLIMIT_CPU else value))


def _read_bounded(path: Path, limit: int) -> bytes:
    size = path.stat().st_size
    with open(path, "rb") as f:
        if size <= limit:
            return f.read()
        head = f.read(limit // 2)
        f.seek(size - limit // 2)
        tail = f.read()
    note = f"\n[... {size - len(head) - len(tail)} bytes of output omitted ...]\n".encode()
    return head + note + tail
