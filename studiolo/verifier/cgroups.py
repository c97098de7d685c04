"""Per-check cgroups: memory and process-count limits for a check's whole process tree.

`CgroupRoot.detect()` finds where this process may make child cgroups (its own memory
and pids cgroups under cgroup v1, or its own cgroup under v2) and says why when it
cannot. `CgroupRoot.create` makes one `CheckCgroup` per run of a check; the sandbox's
child writes its pid into it before it `exec`s, so everything the check ever starts is
counted, killed and removed together.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["CgroupRoot", "CheckCgroup"]

_CONTROLLERS = ("memory", "pids")


@dataclass
class CheckCgroup:
    """One run's cgroup directories: controller name → directory (v1), or one for both (v2)."""

    dirs: dict[str, Path]
    version: int
    made: list[Path] = field(default_factory=list)

    def procs_files(self) -> tuple[str, ...]:
        """Where the child writes its pid (once per distinct directory)."""
        return tuple(str(d / "cgroup.procs") for d in dict.fromkeys(self.dirs.values()))

    def pids(self) -> set[int]:
        found: set[int] = set()
        for path in self.procs_files():
            with contextlib.suppress(OSError):
                found |= {int(line) for line in Path(path).read_text().split()}
        return found

    def kill(self) -> None:
        """SIGKILL every process in the cgroup until none is left (a fork race converges)."""
        kill_file = self.dirs.get("pids", next(iter(self.dirs.values()))) / "cgroup.kill"
        if self.version == 2 and kill_file.exists():
            with contextlib.suppress(OSError):
                kill_file.write_text("1")
        for _ in range(200):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)

    def limits_hit(self) -> tuple[str, ...]:
        """Which limits the run reached: "memory" (an OOM kill), "processes" (a refused fork)."""
        hit = []
        if "memory" in self.dirs and _counter(self._memory_events(), "oom_kill") > 0:
            hit.append("memory")
        pids_dir = self.dirs.get("pids")
        if pids_dir is not None and _counter(pids_dir / "pids.events", "max") > 0:
            hit.append("processes")
        return tuple(hit)

    def _memory_events(self) -> Path:
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        return self.dirs["memory"] / name

    def remove(self) -> None:
        self.kill()
        for directory in reversed(self.made):
            _rmdir(directory)


@dataclass(frozen=True)
class CgroupRoot:
    """The cgroups this process may make children under, per controller (empty: none)."""

    parents: dict[str, Path]
    version: int
    reason: str = ""  # why a controller is missing, for the log and the operator

    @classmethod
    def detect(cls, proc: Path = Path("/proc/self")) -> CgroupRoot:
        try:
            mounts = (proc / "mounts").read_text().splitlines()
            own = (proc / "cgroup").read_text().splitlines()
        except OSError as exc:
            return cls({}, 0, f"cannot read the cgroup layout: {exc}")
        v1 = _v1_parents(mounts, own)
        if v1:
            missing = [c for c in _CONTROLLERS if c not in v1]
            return cls(v1, 1, f"no writable cgroup v1 {missing[0]} controller" if missing else "")
        return _v2_root(mounts, own)

    def describe(self) -> str:
        if not self.parents:
            return f"none ({self.reason})"
        return f"cgroup v{self.version} {'+'.join(sorted(self.parents))}" + (
            f"; {self.reason}" if self.reason else ""
        )

    def create(self, memory_bytes: int | None, processes: int | None) -> CheckCgroup | None:
        if not self.parents:
            return None
        name = f"studiolo-check-{secrets.token_hex(6)}"
        group = CheckCgroup({}, self.version)
        try:
            for controller, parent in sorted(self.parents.items()):
                directory = parent / name
                if directory not in group.made:
                    directory.mkdir()
                    group.made.append(directory)
                group.dirs[controller] = directory
            _write_limits(group, memory_bytes, processes)
        except OSError:
            group.remove()
            raise
        return group


def _write_limits(group: CheckCgroup, memory_bytes: int | None, processes: int | None) -> None:
    memory, pids = group.dirs.get("memory"), group.dirs.get("pids")
    if memory is not None and memory_bytes is not None:
        if group.version == 1:
            (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
            with contextlib.suppress(OSError):  # absent without swap accounting
                (memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
        else:
            (memory / "memory.max").write_text(str(memory_bytes))
            with contextlib.suppress(OSError):
                (memory / "memory.swap.max").write_text("0")
    if pids is not None and processes is not None:
        (pids / "pids.max").write_text(str(processes))


def _v1_parents(mounts: list[str], own: list[str]) -> dict[str, Path]:
    paths = {}
    for line in own:
        _id, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            paths[controller] = path
    found = {}
    for line in mounts:
        parts = line.split()
        if len(parts) < 4 or parts[2] != "cgroup":
            continue
        for controller in set(parts[3].split(",")) & set(_CONTROLLERS):
            parent = _own_dir(Path(parts[1]), paths.get(controller, "/"))
            if os.access(parent, os.W_OK):
                found[controller] = parent
    return found


def _v2_root(mounts: list[str], own: list[str]) -> CgroupRoot:
    mount = next((Path(p.split()[1]) for p in mounts if p.split()[2:3] == ["cgroup2"]), None)
    path = next((line[3:] for line in own if line.startswith("0::")), None)
    if mount is None or path is None:
        return CgroupRoot({}, 0, "no cgroup v1 memory/pids mount and no cgroup v2")
    parent = _own_dir(mount, path)
    try:
        enabled = (parent / "cgroup.subtree_control").read_text().split()
    except OSError as exc:
        return CgroupRoot({}, 0, f"cgroup v2 at {parent} is not readable: {exc}")
    usable = {c: parent for c in _CONTROLLERS if c in enabled}
    if not usable or not os.access(parent, os.W_OK):
        why = f"cgroup v2 {parent} does not delegate memory/pids to children (cgroup.subtree_control)"
        return CgroupRoot({}, 0, why)
    missing = [c for c in _CONTROLLERS if c not in usable]
    return CgroupRoot(usable, 2, f"cgroup v2 does not delegate {missing[0]}" if missing else "")


def _own_dir(mount: Path, path: str) -> Path:
    """This process's cgroup under `mount` (the mount itself inside a cgroup namespace)."""
    candidate = mount / path.lstrip("/")
    return candidate if candidate.is_dir() else mount


def _counter(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _rmdir(directory: Path) -> None:
    deadline = time.monotonic() + 5
    while True:
        try:
            directory.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
