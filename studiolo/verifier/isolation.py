"""Check isolation with bubblewrap: namespaces, a minimal mount view, an unprivileged uid.

`Isolation.probe()` checks once that this machine can isolate a check (bwrap present,
namespaces allowed, the uid drop works) and raises `IsolationUnavailable`, saying why,
when it cannot. `Isolation.wrap` turns a checker's argv into a bwrap command line:

- its own PID namespace with a fresh `/proc` (the check sees only its own processes; when
  its first process exits, or bwrap or the verifier dies, every process it started dies),
  and its own mount, IPC, UTS and cgroup namespaces; its own network namespace (only a
  loopback of its own) unless the checker's config says `"network": true`;
- a mount view of the toolchain read-only (`/usr`, the interpreter's prefixes, a few
  files of `/etc`), the candidate tree read-only, the runner's input files read-only,
  the report directory, and size-limited tmpfs as scratch and `/dev/shm`; the root is
  read-only and nothing else of the host exists (not the runner's cwd, home, key file or
  ledger);
- as root, the check drops to an unprivileged uid/gid (65534 by default) with no
  capabilities and `no_new_privs`; as another user, it keeps that user's uid inside a
  user namespace (and bubblewrap's `--disable-userns` forbids nesting another);
- a seccomp filter (`seccomp.py`): no kernel keyrings, no new user namespaces.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from studiolo.verifier import seccomp
from studiolo.verifier.cgroups import CgroupRoot

__all__ = ["Isolation", "IsolationUnavailable", "View"]

NOBODY = (65534, 65534)
_TOP_LEVEL = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_ETC = (
    "passwd", "group", "nsswitch.conf", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
    "alternatives", "ssl", "ca-certificates", "localtime", "timezone", "hosts",
    "protocols", "services", "mime.types",
)  # fmt: skip
_NETWORK_ETC = ("resolv.conf", "host.conf", "gai.conf")
_SHIM = (
    "import os, sys; u, g = int(sys.argv[1]), int(sys.argv[2]); os.setgroups([]); "
    "os.setgid(g); os.setuid(u); os.execvp(sys.argv[3], sys.argv[3:])"
)


class IsolationUnavailable(Exception):
    """This machine cannot isolate checks; the message says why and what to do."""


@dataclass(frozen=True)
class View:
    """What one run sees besides the toolchain (host paths, mounted at the same paths)."""

    tree: Path  # read-only, the working directory
    scratch: Path  # a fresh tmpfs of `scratch_bytes`
    inputs: Path  # read-only: files the runner wrote for the checker (a pytest.ini)
    reports: Path  # writable only where the runner made files owned by the check's uid
    scratch_bytes: int | None
    network: bool = False


@dataclass(frozen=True)
class Isolation:
    bwrap: str
    toolchain: tuple[Path, ...]
    uid: int | None  # drop to this uid/gid inside (the verifier is root); None: keep ours
    gid: int | None
    cgroups: CgroupRoot
    seccomp: bytes | None = None  # the filter of `seccomp.py`; None: unknown architecture
    disable_userns: bool = False  # bwrap has `--disable-userns` (used with `--unshare-user`)

    @classmethod
    def probe(
        cls,
        run_as: tuple[int, int] | None = None,
        extra_toolchain: Iterable[Path] = (),
        bwrap: str | None = None,
    ) -> Isolation:
        """An `Isolation` that was just shown to work here, or `IsolationUnavailable`."""
        found = bwrap or shutil.which("bwrap", path="/usr/bin:/bin:/usr/local/bin")
        if found is None:
            raise IsolationUnavailable(
                "bubblewrap (bwrap) is not installed; install it (apt-get install bubblewrap)"
            )
        extra_toolchain = [Path(p) for p in extra_toolchain]
        missing = [str(p) for p in extra_toolchain if not p.is_absolute() or not p.is_dir()]
        if missing:
            raise IsolationUnavailable(f"a toolchain path is not an absolute directory: {missing[0]}")
        root = os.geteuid() == 0
        uid, gid = (run_as or NOBODY) if root else (None, None)
        userns = _supports(found, "--disable-userns")
        tools = _toolchain(extra_toolchain)
        iso = cls(found, tools, uid, gid, CgroupRoot.detect(), seccomp.program(), userns)
        iso._try()
        return iso

    def filter_fd(self) -> int | None:
        """A new fd holding the seccomp filter, for one bwrap run (the caller closes it)."""
        if self.seccomp is None:
            return None
        fd = os.memfd_create("studiolo-seccomp")
        os.write(fd, self.seccomp)
        os.lseek(fd, 0, os.SEEK_SET)
        return fd

    def _try(self) -> None:
        view = View(Path("/"), Path("/nonexistent-scratch"), Path("/"), Path("/"), 1 << 20)
        want = str(self.uid if self.uid is not None else os.geteuid())
        script = f'test "$(id -u)" = {want}'
        fd = self.filter_fd()
        argv = self.wrap(["/bin/sh", "-c", script], view, tree_mounts=False, seccomp_fd=fd)
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                timeout=30,
                env={"PATH": "/usr/bin:/bin"},
                pass_fds=() if fd is None else (fd,),
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise IsolationUnavailable(f"{self.bwrap} could not be run: {exc}") from exc
        finally:
            if fd is not None:
                os.close(fd)
        if done.returncode != 0:
            why = done.stderr.decode("utf-8", "replace").strip() or f"exit code {done.returncode}"
            raise IsolationUnavailable(f"bubblewrap cannot make the namespaces a check needs: {why}")

    def describe(self) -> str:
        who = f"uid {self.uid}" if self.uid is not None else f"uid {os.geteuid()} in a user namespace"
        nested = "; nested user namespaces disabled" if self.uid is None and self.disable_userns else ""
        if self.seccomp is None:
            filtered = f"; NO seccomp filter (unknown architecture {platform.machine()})"
        else:
            filtered = "; seccomp: no keyrings, no new user namespaces"
        return f"isolated (bwrap: pid, mount, ipc, uts, net namespaces; {who}{nested}{filtered})"

    def wrap(
        self, argv: Sequence[str], view: View, *, tree_mounts: bool = True, seccomp_fd: int | None = None
    ) -> list[str]:
        """The bwrap command line that runs `argv` in `view` (`seccomp_fd`: from `filter_fd`)."""
        out = [self.bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc"]
        out += ["--unshare-uts", "--hostname", "studiolo-check", "--unshare-cgroup-try"]
        if not view.network:
            out.append("--unshare-net")
        if self.uid is None:
            out.append("--unshare-user")
            if self.disable_userns:
                out.append("--disable-userns")
        if seccomp_fd is not None:
            out += ["--seccomp", str(seccomp_fd)]
        out += self._mounts(view, tree_mounts)
        out += ["--proc", "/proc", "--dev", "/dev", *_tmpfs(Path("/dev/shm"), view.scratch_bytes)]
        out += ["--remount-ro", "/"]
        out += ["--chdir", str(view.tree) if tree_mounts else "/", "--"]
        return out + self._drop(argv)

    def _drop(self, argv: Sequence[str]) -> list[str]:
        if self.uid is None or self.gid is None:
            return list(argv)
        setpriv = Path("/usr/bin/setpriv")
        if setpriv.exists():
            ids = [f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups"]
            return [str(setpriv), *ids, "--inh-caps=-all", "--bounding-set=-all", "--", *argv]
        return [sys.executable, "-I", "-S", "-c", _SHIM, str(self.uid), str(self.gid), *argv]

    def _mounts(self, view: View, tree_mounts: bool) -> list[str]:
        binds = [("--ro-bind", p, p) for p in self.toolchain]
        etc = _ETC + (_NETWORK_ETC if view.network else ())
        binds += [("--ro-bind-try", Path("/etc", n), Path("/etc", n)) for n in etc]
        if tree_mounts:
            binds += [("--ro-bind", view.tree, view.tree), ("--ro-bind", view.inputs, view.inputs)]
            binds += [("--bind", view.reports, view.reports)]
        dests = [d for _op, _s, d in binds] + ([view.scratch] if tree_mounts else [])
        out = _parent_dirs(dests)
        out += _top_level()
        for op, src, dest in sorted(binds, key=lambda b: len(b[2].parts)):
            out += [op, str(src), str(dest)]
        if tree_mounts:
            out += _tmpfs(view.scratch, view.scratch_bytes)
        return out


def _supports(bwrap: str, option: str) -> bool:
    """Whether this bubblewrap knows `option` (0.8.0 added `--disable-userns`)."""
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return option.encode() in done.stdout + done.stderr


def _tmpfs(path: Path, size: int | None) -> list[str]:
    """A fresh tmpfs anyone inside may write (only the check's processes exist there)."""
    limit = [] if size is None else ["--size", str(size)]
    return ["--perms", "01777", *limit, "--tmpfs", str(path)]


def _toolchain(extra: Iterable[Path]) -> tuple[Path, ...]:
    """/usr, the interpreter's prefixes (a venv and its base), the executable's real home."""
    exe = Path(os.path.realpath(sys.executable))
    wanted = {Path("/usr"), exe.parent.parent, *map(Path, extra)}
    wanted |= {Path(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    resolved = sorted({Path(os.path.realpath(p)) for p in wanted if p.is_dir()} | wanted & {Path("/usr")})
    return tuple(p for p in resolved if not any(q != p and q in p.parents for q in resolved))


def _top_level() -> list[str]:
    """/bin, /lib… as the host has them: symlinks into /usr (merged /usr) or read-only binds."""
    out: list[str] = []
    for name in _TOP_LEVEL:
        path = Path("/", name)
        if path.is_symlink():
            out += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            out += ["--ro-bind", str(path), str(path)]
    return out


def _parent_dirs(dests: Iterable[Path]) -> list[str]:
    """Every ancestor of a mount point, traversable (bwrap would make them 0700)."""
    parents = sorted({a for d in dests for a in d.parents if a != Path("/")}, key=lambda p: len(p.parts))
    out: list[str] = []
    for directory in parents:
        out += ["--perms", "0755", "--dir", str(directory)]
    return out
