"""Where per-check cgroups are made: cgroup v1 (memory and pids mounts), cgroup v2 (a
delegated cgroup), or nowhere — said, not pretended. The real thing is exercised by the
memory and process tests in test_isolation.py; these read a fake /proc and cgroup tree."""

from __future__ import annotations

from pathlib import Path

from studiolo.verifier.cgroups import CgroupRoot


def _proc(tmp_path: Path, mounts: list[str], cgroup: list[str]) -> Path:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "mounts").write_text("\n".join(mounts) + "\n")
    (proc / "cgroup").write_text("\n".join(cgroup) + "\n")
    return proc


def test_v1_children_go_under_the_runners_own_memory_and_pids_cgroups(tmp_path: Path) -> None:
    own = tmp_path / "memory" / "jobs" / "j1"
    own.mkdir(parents=True)
    (tmp_path / "pids").mkdir()
    mounts = [
        f"cgroup {tmp_path / 'memory'} cgroup rw,relatime,memory 0 0",
        f"cgroup {tmp_path / 'pids'} cgroup rw,relatime,pids 0 0",
        f"cgroup {tmp_path / 'cpu'} cgroup rw,relatime,cpu 0 0",
    ]
    root = CgroupRoot.detect(_proc(tmp_path, mounts, ["4:memory:/jobs/j1", "8:pids:/", "1:cpu:/"]))
    assert (root.version, root.parents) == (1, {"memory": own, "pids": tmp_path / "pids"})
    assert root.describe() == "cgroup v1 memory+pids"


def test_v2_needs_memory_and_pids_delegated(tmp_path: Path) -> None:
    own = tmp_path / "unified" / "svc"
    own.mkdir(parents=True)
    mounts = [f"cgroup2 {tmp_path / 'unified'} cgroup2 rw 0 0"]
    proc = _proc(tmp_path, mounts, ["0::/svc"])
    (own / "cgroup.subtree_control").write_text("cpu io\n")
    refused = CgroupRoot.detect(proc)
    assert refused.parents == {} and "does not delegate memory/pids" in refused.reason
    assert refused.describe().startswith("none (cgroup v2")
    assert refused.create(1 << 20, 10) is None
    (own / "cgroup.subtree_control").write_text("cpu memory pids\n")
    root = CgroupRoot.detect(proc)
    assert (root.version, root.parents) == (2, {"memory": own, "pids": own})


def test_no_cgroup_is_said(tmp_path: Path) -> None:
    root = CgroupRoot.detect(_proc(tmp_path, ["proc /proc proc rw 0 0"], ["0::/"]))
    assert root.parents == {} and root.reason == "no cgroup v1 memory/pids mount and no cgroup v2"
