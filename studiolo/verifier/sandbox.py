"""Run a checker's process: fresh workspace, isolation, timeout, per-check resource limits.

A `Workspace` (`workspace.py`) is a new private temporary directory holding `tree/` (the
candidate, sealed read-only), `scratch/`, `inputs/` (files the runner writes for the
checker, such as a pytest.ini), `reports/` (files the checker writes for the runner, such
as the outputs archive) and `output.log`. `Sandbox.run` starts one process of a check:

- isolated (the default; see `isolation.py`): in bubblewrap's namespaces, seeing only the
  toolchain, the tree, the inputs and reports, and a size-limited tmpfs as `scratch`, as
  an unprivileged uid; in a fresh cgroup (see `cgroups.py`) whose memory and process
  limits hold for everything the run starts, killed and removed afterwards;
- not isolated (`isolation=None`, only with the runner's explicit unsafe option): in its
  own session with POSIX rlimits, as the verifier's own user (or `Limits.run_as`).

Either way the wall-clock timeout kills everything the run started, the environment is
explicit, and the checker's output never grows without bound.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from studiolo.verifier.cgroups import CheckCgroup
from studiolo.verifier.channel import Channel
from studiolo.verifier.isolation import Isolation, View
from studiolo.verifier.workspace import Workspace

__all__ = ["Limits", "ProcessResult", "Sandbox", "Workspace"]

_GIB = 1024**3
_MIB = 1024**2


@dataclass(frozen=True, kw_only=True)
class Limits:
    """Ceilings for one check. `None` leaves a resource at the verifier's own limit."""

    timeout: float = 300.0  # wall clock, seconds; a checker's config may ask for less, never more
    cpu_seconds: int | None = None  # per process; default: the timeout, rounded up, plus one second
    memory_bytes: int | None = 2 * _GIB  # per check (cgroup); per process (RLIMIT_AS) without one
    file_bytes: int | None = 256 * _MIB  # largest file the checker may write (RLIMIT_FSIZE)
    processes: int | None = 256  # per check (pids cgroup); RLIMIT_NPROC (per user) without one
    scratch_bytes: int | None = 512 * _MIB  # the scratch tmpfs of an isolated check
    tree_bytes: int | None = 1 * _GIB  # the materialized candidate tree, counted before writing
    log_bytes: int = 1 * _MIB  # output kept in the log (the head and the tail)
    run_as: tuple[int, int] | None = None  # (uid, gid) of checks; isolated default 65534 (root only)

    def effective_timeout(self, requested: float | None = None) -> float:
        return self.timeout if requested is None else min(requested, self.timeout)


@dataclass(frozen=True)
class ProcessResult:
    argv: tuple[str, ...]
    exit_code: int | None  # None when killed for the timeout
    timed_out: bool
    output: bytes  # stdout and stderr, interleaved, truncated to `Limits.log_bytes`
    seconds: float
    limits_hit: tuple[str, ...] = ()  # "memory", "processes": per-check limits the run reached
    network: bool = False  # the run shared the host's network (the checker's config asked)

    def describe(self) -> str:
        if self.timed_out:
            text = f"timed out after {self.seconds:.1f}s (every process of the check killed)"
        elif self.exit_code is not None and self.exit_code < 0:
            text = f"killed by signal {signal.Signals(-self.exit_code).name}"
        else:
            text = f"exit code {self.exit_code}"
        hit = [f"the check's {name} limit was reached" for name in self.limits_hit]
        return "; ".join([text, *hit])


class Sandbox:
    """Runs commands for one check inside a `Workspace`, under `Limits`.

    `isolation` is required: an `Isolation` (see `Isolation.probe`), or `None` to run
    without any, which only the runner's explicit unsafe option should ask for.
    """

    def __init__(self, workspace: Workspace, limits: Limits, *, isolation: Isolation | None) -> None:
        self.workspace = workspace
        self.limits = limits
        self.isolation = isolation

    @property
    def tree(self) -> Path:
        return self.workspace.tree

    @property
    def scratch(self) -> Path:
        return self.workspace.scratch

    @contextlib.contextmanager
    def separate(self, files: Mapping[str, bytes]) -> Iterator[Sandbox]:
        """A second sandbox for this check, with a fresh workspace whose tree holds only
        `files` (relative paths): no candidate bytes, and (isolated) none of the candidate's
        processes, which died with the first sandbox's PID namespace. Where a verdict the
        candidate cannot touch is computed (kind `outputs`)."""
        with Workspace(self.workspace.root.parent, self.workspace.group) as ws:
            for rel, data in sorted(files.items()):
                target = ws.tree / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            ws.seal()
            yield Sandbox(ws, self.limits, isolation=self.isolation)

    def input_file(self, name: str, data: bytes) -> Path:
        """A file the checker may read but not change (the path is the same inside)."""
        path = self.workspace.inputs / name
        path.write_bytes(data)
        path.chmod(0o444)
        return path

    def report_file(self, name: str) -> Path:
        """An empty file the checker may write (its only writable place besides scratch)."""
        path = self.workspace.reports / name
        path.touch(mode=0o644)
        owner = self._uid()
        if owner is not None and owner != (os.geteuid(), os.getegid()):
            os.chown(path, *owner)
        return path

    def read_report(self, name: str, limit: int) -> bytes | None:
        """What the check wrote to `report_file(name)`: None unless it is still a regular
        file (not a link the check put in its place) of at most `limit` bytes."""
        try:
            fd = os.open(self.workspace.reports / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
                return None
            data = f.read(limit + 1)
        return data if len(data) <= limit else None

    def _uid(self) -> tuple[int, int] | None:
        if self.isolation is not None and self.isolation.uid is not None:
            return self.isolation.uid, self.isolation.gid or self.isolation.uid
        return self.limits.run_as if self.isolation is None else None

    def describe(self) -> str:
        """One line for the log: how this check was contained, and what was not enforced."""
        if self.isolation is None:
            return "NOT isolated (--unsafe-no-isolation): per-process rlimits only"
        cgroups = self.isolation.cgroups
        scratch = self.limits.scratch_bytes
        size = f"{scratch // _MIB} MiB" if scratch is not None else "unlimited"
        per_check = (
            f"memory and processes per check: {cgroups.describe()}"
            if cgroups.parents
            else f"memory and processes per process only: no cgroup ({cgroups.reason})"
        )
        return f"{self.isolation.describe()}; {per_check}; scratch tmpfs {size}"

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
        network: bool = False,
        channel: Channel | None = None,
    ) -> ProcessResult:
        """Run `argv` with cwd = the read-only tree; kill everything it started when done.
        With a `channel`, the first process inherits its write end (`$STUDIOLO_CHANNEL_FD`)."""
        wall = self.limits.effective_timeout(timeout)
        group = self._cgroup()
        if channel is not None:
            env = {**(env or {}), Channel.ENV: str(channel.write_fd)}
        try:
            return self._run(argv, wall, env, network, group, channel)
        finally:
            if group is not None:
                group.remove()

    def _cgroup(self) -> CheckCgroup | None:
        if self.isolation is None:
            return None
        return self.isolation.cgroups.create(self.limits.memory_bytes, self.limits.processes)

    def _command(self, argv: Sequence[str], network: bool, seccomp_fd: int | None) -> list[str]:
        if self.isolation is None:
            if self.limits.run_as is not None:
                os.chown(self.scratch, *self.limits.run_as)
            return list(argv)
        ws = self.workspace
        view = View(ws.tree, ws.scratch, ws.inputs, ws.reports, self.limits.scratch_bytes, network)
        return self.isolation.wrap(argv, view, seccomp_fd=seccomp_fd)

    def _run(
        self,
        argv: Sequence[str],
        wall: float,
        env: Mapping[str, str] | None,
        network: bool,
        group: CheckCgroup | None,
        channel: Channel | None,
    ) -> ProcessResult:
        fd = self.isolation.filter_fd() if self.isolation is not None else None
        command = self._command(argv, network, fd)
        fds = tuple(f for f in (fd, channel.write_fd if channel else None) if f is not None)
        start = time.monotonic()
        with open(self.workspace.output, "wb") as out:
            try:
                proc = subprocess.Popen(
                    command,
                    cwd=self.tree,
                    env=self.env(env),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=_child_setup(self.limits, wall, group, self.isolation is None),
                    close_fds=True,
                    pass_fds=fds,
                )
            finally:
                if fd is not None:
                    os.close(fd)
                if channel is not None:
                    channel.started()
            timed_out = False
            try:
                code: int | None = proc.wait(timeout=wall)
            except subprocess.TimeoutExpired:
                timed_out, code = True, None
            seconds = wall if timed_out else time.monotonic() - start  # a timeout says its limit
            _kill_all(proc.pid, group)
            proc.wait()
        if self.isolation is not None and code is not None:
            code = _signal_code(code)
        output = _read_bounded(self.workspace.output, self.limits.log_bytes)
        hit = group.limits_hit() if group is not None else ()
        return ProcessResult(tuple(argv), code, timed_out, output, seconds, hit, network)


def _signal_code(code: int) -> int:
    """bwrap reports a check killed by signal N as exit code 128 + N (as shells do)."""
    signals = {s.value for s in signal.Signals}
    return -(code - 128) if code > 128 and code - 128 in signals else code


def _kill_all(pgid: int, group: CheckCgroup | None) -> None:
    """The process group (without isolation), bwrap (whose death ends the PID namespace),
    and whatever is left in the check's cgroup."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    if group is not None:
        group.kill()


def _child_setup(limits: Limits, wall: float, group: CheckCgroup | None, unsafe: bool) -> Callable[[], None]:
    """Compute everything in the parent; the child only writes its pid, calls setrlimit
    and (without isolation) drops to `run_as` — all fork-safe system calls."""
    cpu = limits.cpu_seconds if limits.cpu_seconds is not None else int(wall) + 1
    memory = None if group is not None and "memory" in group.dirs else limits.memory_bytes
    processes = None if group is not None and "pids" in group.dirs else limits.processes
    wanted: list[tuple[int, int | None]] = [
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_AS, memory),
        (resource.RLIMIT_FSIZE, limits.file_bytes),
        (resource.RLIMIT_NPROC, processes),
        (resource.RLIMIT_CORE, 0),
    ]
    settings = [(res, _pair(res, value)) for res, value in wanted if value is not None]
    procs_files = group.procs_files() if group is not None else ()
    run_as = limits.run_as if unsafe else None

    def apply() -> None:
        pid = str(os.getpid()).encode()
        for path in procs_files:
            fd = os.open(path, os.O_WRONLY)
            os.write(fd, pid)
            os.close(fd)
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
