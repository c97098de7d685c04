"""Which git mechanism publishes a commit fastest on a 10,000-file tree (docs/git.md).

Each mechanism builds the same tree (100 directories of 100 files) once, then publishes
`--commits` commits that each change one file: the blob, the tree (only the changed
directory and the root are new), a commit with fixed author and committer times, and the
branch moved by compare-and-swap on its old value. Mechanisms: the `git` binary's plumbing
(hash-object, update-index on a private index, write-tree, commit-tree, update-ref), and
dulwich and pygit2 when importable (`pip install dulwich pygit2` in a scratch venv: they
are not Studiolo dependencies). Every mechanism must give the same commit ids: the run
fails otherwise. Last line JSON.

    python bench/git_mechanism.py [--files 10000] [--commits 50]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

_ENV = {
    "GIT_AUTHOR_NAME": "agent",
    "GIT_AUTHOR_EMAIL": "agent@studiolo",
    "GIT_COMMITTER_NAME": "studiolo",
    "GIT_COMMITTER_EMAIL": "service@studiolo",
}
_REF = "refs/heads/main"


def _files(n: int) -> dict[str, bytes]:
    return {f"d{i // 100:03d}/f{i % 100:03d}.txt": f"file {i}\n".encode() for i in range(n)}


def _message(i: int) -> bytes:
    return f"change {i}\n\nStudiolo-Version: {i}\n".encode()


def _when(i: int) -> int:
    return 1_800_000_000 + i


def _run(args: list[str], repo: Path, data: bytes = b"", env: dict[str, str] | None = None) -> str:
    full = {**os.environ, **_ENV, "GIT_DIR": str(repo), **(env or {})}
    out = subprocess.run(["git", *args], input=data, capture_output=True, env=full, check=True)
    return out.stdout.decode().strip()


class Plumbing:
    """The `git` binary: one private index per branch keeps write-tree incremental."""

    name = "git plumbing"

    def __init__(self, repo: Path) -> None:
        _run(["init", "-q", "--bare", str(repo)], repo)
        self.repo, self.index = repo, {"GIT_INDEX_FILE": str(repo / "studiolo-index")}
        self.head = ""

    def build(self, files: dict[str, bytes]) -> str:
        lines = []
        for path, data in files.items():
            oid = _run(["hash-object", "-w", "--stdin"], self.repo, data) if len(files) < 50 else ""
            lines.append((path, data, oid))
        if not lines[0][2]:  # many files: one process hashes them all from a list of paths
            with tempfile.TemporaryDirectory() as tmp:
                for path, data, _ in lines:
                    (Path(tmp) / path.replace("/", "_")).write_bytes(data)
                names = "\n".join(str(Path(tmp) / p.replace("/", "_")) for p, _, _ in lines).encode()
                oids = _run(["hash-object", "-w", "--stdin-paths"], self.repo, names).split()
            lines = [(p, d, o) for (p, d, _), o in zip(lines, oids, strict=True)]
        info = "".join(f"100644 {oid}\t{path}\n" for path, _, oid in lines).encode()
        _run(["update-index", "--add", "--index-info"], self.repo, info, self.index)
        return self._commit(0)

    def change(self, i: int, path: str, data: bytes) -> str:
        oid = _run(["hash-object", "-w", "--stdin"], self.repo, data)
        _run(["update-index", "--index-info"], self.repo, f"100644 {oid}\t{path}\n".encode(), self.index)
        return self._commit(i)

    def _commit(self, i: int) -> str:
        tree = _run(["write-tree"], self.repo, env=self.index)
        dates = {"GIT_AUTHOR_DATE": f"{_when(i)} +0000", "GIT_COMMITTER_DATE": f"{_when(i)} +0000"}
        parent = ["-p", self.head] if self.head else []
        commit = _run(["commit-tree", tree, *parent], self.repo, _message(i), dates)
        _run(["update-ref", _REF, commit, self.head or "0" * 40], self.repo)
        self.head = commit
        return commit


class Dulwich:
    name = "dulwich"

    def __init__(self, repo: Path) -> None:
        from dulwich.repo import Repo

        self.repo = Repo.init_bare(str(repo), mkdir=True)
        self.head: bytes | None = None
        self.tree = b""

    def build(self, files: dict[str, bytes]) -> str:
        from dulwich.index import commit_tree
        from dulwich.objects import Blob

        store, entries = self.repo.object_store, []
        for path, data in files.items():
            blob = Blob.from_string(data)
            store.add_object(blob)
            entries.append((path.encode(), blob.id, 0o100644))
        self.tree = commit_tree(store, entries)
        return self._commit(0)

    def change(self, i: int, path: str, data: bytes) -> str:
        from dulwich.object_store import commit_tree_changes
        from dulwich.objects import Blob

        blob = Blob.from_string(data)
        self.repo.object_store.add_object(blob)
        tree = self.repo.object_store[self.tree]
        new = commit_tree_changes(self.repo.object_store, tree, [(path.encode(), 0o100644, blob.id)])
        self.tree = new if isinstance(new, bytes) else new.id
        return self._commit(i)

    def _commit(self, i: int) -> str:
        from dulwich.objects import Commit

        c = Commit()
        c.tree, c.parents = self.tree, [self.head] if self.head else []
        c.author = f"{_ENV['GIT_AUTHOR_NAME']} <{_ENV['GIT_AUTHOR_EMAIL']}>".encode()
        c.committer = f"{_ENV['GIT_COMMITTER_NAME']} <{_ENV['GIT_COMMITTER_EMAIL']}>".encode()
        c.author_time = c.commit_time = _when(i)
        c.author_timezone = c.commit_timezone = 0
        c.message = _message(i)
        self.repo.object_store.add_object(c)
        if not self.repo.refs.set_if_equals(_REF.encode(), self.head, c.id):
            raise RuntimeError("ref moved")
        self.head = c.id
        return c.id.decode()


class Pygit2:
    """libgit2: a change rewrites only the trees on its path (TreeBuilder), as Studiolo does."""

    name = "pygit2"

    def __init__(self, repo: Path) -> None:
        import pygit2

        self.pg = pygit2
        self.repo = pygit2.init_repository(str(repo), bare=True)
        self.head: object | None = None
        self.tree: object | None = None

    def build(self, files: dict[str, bytes]) -> str:
        index = self.pg.Index()
        for path, data in files.items():
            index.add(self.pg.IndexEntry(path, self.repo.create_blob(data), self.pg.enums.FileMode.BLOB))
        self.tree = index.write_tree(self.repo)
        return self._commit(0)

    def change(self, i: int, path: str, data: bytes) -> str:
        self.tree = self._put(self.tree, path.split("/"), self.repo.create_blob(data))
        return self._commit(i)

    def _put(self, tree: object, parts: list[str], blob: object) -> object:
        pg, builder = self.pg, self.repo.TreeBuilder(self.repo[tree]) if tree else self.repo.TreeBuilder()
        if len(parts) == 1:
            builder.insert(parts[0], blob, pg.enums.FileMode.BLOB)
        else:
            entry = builder.get(parts[0])
            sub = self._put(entry.id if entry else None, parts[1:], blob)
            builder.insert(parts[0], sub, pg.enums.FileMode.TREE)
        return builder.write()

    def _commit(self, i: int) -> str:
        pg = self.pg
        author = pg.Signature(_ENV["GIT_AUTHOR_NAME"], _ENV["GIT_AUTHOR_EMAIL"], _when(i), 0)
        committer = pg.Signature(_ENV["GIT_COMMITTER_NAME"], _ENV["GIT_COMMITTER_EMAIL"], _when(i), 0)
        parents = [self.head] if self.head else []
        oid = self.repo.create_commit(None, author, committer, _message(i).decode(), self.tree, parents)
        if self.head is None:
            self.repo.references.create(_REF, oid)  # fails if the ref exists
        else:
            self.repo.references.get(_REF).set_target(oid)  # CAS: fails if it moved since read
        self.head = oid
        return str(oid)


Mechanism = Plumbing | Dulwich | Pygit2


def _measure(make: Callable[[Path], Mechanism], files: dict[str, bytes], n: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        mech = make(Path(tmp) / "repo.git")
        t0 = time.perf_counter()
        first = mech.build(files)
        built = time.perf_counter() - t0
        paths, times, last = sorted(files), [], first
        for i in range(1, n + 1):
            path = paths[(i * 7919) % len(paths)]
            t = time.perf_counter()
            last = mech.change(i, path, f"changed {i}\n".encode())
            times.append(time.perf_counter() - t)
    times.sort()
    return {
        "mechanism": mech.name,
        "build_s": round(built, 3),
        "commit_ms_median": round(statistics.median(times) * 1000, 2),
        "commit_ms_p90": round(times[int(len(times) * 0.9)] * 1000, 2),
        "first": first,
        "last": last,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--commits", type=int, default=50)
    args = ap.parse_args()
    files = _files(args.files)
    makers: list[Callable[[Path], Mechanism]] = [Plumbing]
    for module, cls in (("dulwich", Dulwich), ("pygit2", Pygit2)):
        try:
            __import__(module)
            makers.append(cls)
        except ImportError:
            print(f"{module}: not importable, skipped", file=sys.stderr)
    results = [_measure(m, files, args.commits) for m in makers]
    for r in results:
        print(f"{r['mechanism']:>13}: build {r['build_s']} s, one commit median {r['commit_ms_median']} ms")
    same = len({(r["first"], r["last"]) for r in results}) == 1
    print(json.dumps({"files": args.files, "commits": args.commits, "same_ids": same, "results": results}))
    if not same:
        sys.exit("the mechanisms disagree on commit ids")


if __name__ == "__main__":
    main()
