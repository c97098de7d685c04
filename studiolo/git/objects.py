"""A projector pass's objects, made in memory and written as one pack (docs/git.md,
"Measured"): a loose object costs a file (0.7–2.5 ms each on this machine under load, nine
a completion), a pack costs two files a pass whatever it holds.

Objects are git's own encoding (`blob`, `tree`, `commit`), hashed with SHA-1 as git does,
so ids equal those libgit2 gives for the same content (tests/git/test_objects.py checks
it). The pack (version 2, no deltas) and its index (version 2) are written to temporary
names and renamed, the index last: a reader sees the whole pack or none of it. Many small
packs are merged into one now and then (`consolidate`), so lookups stay cheap."""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from pathlib import Path

import pygit2

from studiolo.git.durable import fsync_dir, write_durably

__all__ = ["Batch", "consolidate", "tree_bytes", "write_pack"]

_TYPES = {b"commit": 1, b"tree": 2, b"blob": 3}
_TREE = 0o40000
_MAX_PACKS = 24  # more packs than this: the small ones are merged

Entries = dict[bytes, tuple[int, bytes]]  # name → (mode, raw 20-byte id)


def _oid(kind: bytes, body: bytes) -> bytes:
    return hashlib.sha1(kind + b" %d\0" % len(body) + body, usedforsecurity=False).digest()


def _key(item: tuple[bytes, tuple[int, bytes]]) -> bytes:
    name, (mode, _) = item
    return name + b"/" if mode == _TREE else name  # git's order: a tree sorts as if it ended in '/'


def _order(entries: Entries) -> list[bytes]:
    return [name for name, _ in sorted(entries.items(), key=_key)]


def tree_bytes(entries: Entries, order: list[bytes] | None = None) -> bytes:
    """A tree object's body; `order`: the names in git's order, if known (else sorted here)."""
    names = order if order is not None else _order(entries)
    return b"".join(b"%o %s\0%s" % (entries[n][0], n, entries[n][1]) for n in names)


def _parse_tree(body: bytes) -> Entries:
    out: Entries = {}
    at = 0
    while at < len(body):
        space = body.index(b" ", at)
        nul = body.index(b"\0", space)
        out[body[space + 1 : nul]] = (int(body[at:space], 8), body[nul + 1 : nul + 21])
        at = nul + 21
    return out


class Batch:
    """Objects made in memory over a repository: read back from here first, then from it."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo
        self.objects: dict[bytes, tuple[bytes, bytes]] = {}  # id → (kind, body)
        self._trees: dict[bytes, Entries] = {}
        self._orders: dict[bytes, list[bytes]] = {}  # tree → its names in git's order
        self._commit_trees: dict[bytes, bytes] = {}
        self._parents: dict[bytes, bytes | None] = {}  # commit made here → its parent

    def add(self, kind: bytes, body: bytes) -> bytes:
        oid = _oid(kind, body)
        self.objects.setdefault(oid, (kind, body))
        return oid

    def tree(self, entries: Entries, like: bytes | None = None) -> bytes:
        """A tree of `entries`; `like`: the tree they were changed from, whose order of names
        is reused when no name came or went (a changed file, the common case: no sort)."""
        order = self._orders.get(like) if like is not None else None
        if order is None or len(order) != len(entries) or not all(n in entries for n in order):
            order = _order(entries)
        oid = self.add(b"tree", tree_bytes(entries, order))
        self._trees[oid] = dict(entries)
        self._orders[oid] = order
        return oid

    def commit(
        self, tree: bytes, parent: bytes | None, author: bytes, committer: bytes, message: bytes
    ) -> bytes:
        head = b"tree %s\n" % tree.hex().encode()
        if parent is not None:
            head += b"parent %s\n" % parent.hex().encode()
        oid = self.add(
            b"commit", head + b"author " + author + b"\ncommitter " + committer + b"\n\n" + message
        )
        self._commit_trees[oid] = tree
        self._parents[oid] = parent
        return oid

    def parents(self) -> dict[bytes, bytes | None]:
        """Each commit made here → its parent (the chains a ref may move along)."""
        return dict(self._parents)

    def entries(self, tree: bytes) -> Entries:
        found = self._trees.get(tree)
        if found is None:
            _kind, body = self.objects.get(tree) or _read(self.repo, tree)
            found = self._trees[tree] = _parse_tree(body)
            self._orders[tree] = list(found)  # a tree as git wrote it: its names in git's order
        return dict(found)

    def tree_of(self, commit: bytes) -> bytes:
        found = self._commit_trees.get(commit)
        if found is None:
            read = self.repo[pygit2.Oid(raw=commit)]
            assert isinstance(read, pygit2.Commit)
            found = self._commit_trees[commit] = read.tree_id.raw
        return found

    def write(self, pack_dir: Path) -> Path | None:
        """The objects as one pack of the repository (None: there were none)."""
        fresh = dict(self.objects)  # an object the repository holds already is harmless twice
        self.objects.clear()
        if not fresh:
            return None
        return write_pack(pack_dir, fresh)


def _read(repo: pygit2.Repository, oid: bytes) -> tuple[bytes, bytes]:
    kind, body = repo.odb.read(pygit2.Oid(raw=oid))
    assert kind == pygit2.enums.ObjectType.TREE, f"{oid.hex()} is not a tree"
    return b"tree", bytes(body)


def _header(kind: bytes, size: int) -> bytes:
    byte = (_TYPES[kind] << 4) | (size & 0x0F)
    size >>= 4
    out = bytearray()
    while size:
        out.append(byte | 0x80)
        byte, size = size & 0x7F, size >> 7
    out.append(byte)
    return bytes(out)


def write_pack(pack_dir: Path, objects: dict[bytes, tuple[bytes, bytes]], level: int = 0) -> Path:
    """`objects` as `pack-<checksum>.pack` and its `.idx` in `pack_dir`; the pack's path.
    `level`: zlib's; 0 (stored) for a pass's pack: trees of object ids barely compress and a
    pass's CPU is the lag, and the merge of small packs (`consolidate`) compresses at 6."""
    pack_dir.mkdir(parents=True, exist_ok=True)
    tmp = pack_dir / f"tmp_pack_{os.getpid()}_{id(objects)}"
    sha = hashlib.sha1(usedforsecurity=False)
    where: dict[bytes, tuple[int, int]] = {}  # id → (offset, crc32)
    with tmp.open("wb") as out:
        head = b"PACK" + struct.pack(">II", 2, len(objects))
        out.write(head)
        sha.update(head)
        offset = len(head)
        for oid, (kind, body) in objects.items():
            chunk = _header(kind, len(body)) + zlib.compress(body, level)
            out.write(chunk)
            sha.update(chunk)
            where[oid] = (offset, zlib.crc32(chunk))
            offset += len(chunk)
        checksum = sha.digest()
        out.write(checksum)
        out.flush()
        os.fsync(out.fileno())  # on disk before a ref may name what it holds (durable.py)
    name = pack_dir / f"pack-{checksum.hex()}"
    tmp_idx = tmp.with_suffix(".idx")
    write_durably(tmp_idx, _index(where, checksum))
    os.replace(tmp, name.with_suffix(".pack"))
    os.replace(tmp_idx, name.with_suffix(".idx"))  # last: the pack exists once its index does
    fsync_dir(pack_dir)  # the names too, before the refs move
    return name.with_suffix(".pack")


def _index(where: dict[bytes, tuple[int, int]], checksum: bytes) -> bytes:
    ids = sorted(where)
    fanout = [0] * 256
    for oid in ids:
        fanout[oid[0]] += 1
    total = 0
    for i in range(256):
        total += fanout[i]
        fanout[i] = total
    large: list[int] = []
    small = []
    for oid in ids:
        offset = where[oid][0]
        if offset < 0x80000000:
            small.append(offset)
        else:
            small.append(0x80000000 | len(large))
            large.append(offset)
    body = b"\377tOc" + struct.pack(">I", 2) + struct.pack(">256I", *fanout) + b"".join(ids)
    body += struct.pack(f">{len(ids)}I", *(where[oid][1] for oid in ids))
    body += struct.pack(f">{len(ids)}I", *small) + struct.pack(f">{len(large)}Q", *large) + checksum
    return body + hashlib.sha1(body, usedforsecurity=False).digest()


def _ids_of(idx: Path) -> list[bytes]:
    data = idx.read_bytes()
    count = struct.unpack(">I", data[8 + 255 * 4 : 8 + 256 * 4])[0]
    start = 8 + 256 * 4
    return [data[start + 20 * i : start + 20 * (i + 1)] for i in range(count)]


def consolidate(repo: pygit2.Repository, pack_dir: Path) -> None:
    """Past `_MAX_PACKS` packs, merge the smaller half into one (a geometric sequence: an
    object is rewritten a few times, not at every merge). Objects are read through the
    repository and the old packs removed only once the new one is whole."""
    names = [n for n in os.listdir(pack_dir) if n.startswith("pack-") and n.endswith(".idx")]
    if len(names) <= _MAX_PACKS:  # the common case: one directory read, no stat
        return
    packs = sorted((pack_dir / n for n in names), key=lambda p: p.with_suffix(".pack").stat().st_size)
    small = packs[: _MAX_PACKS // 2]
    merged: dict[bytes, tuple[bytes, bytes]] = {}
    kinds = {v: k for k, v in _TYPES.items()}
    for idx in small:
        for oid in _ids_of(idx):
            kind, body = repo.odb.read(pygit2.Oid(raw=oid))
            merged[oid] = (kinds[int(kind)], bytes(body))
    new = write_pack(pack_dir, merged, 6)
    for idx in small:
        if idx.with_suffix(".pack") != new:
            for suffix in (".idx", ".rev", ".pack"):
                idx.with_suffix(suffix).unlink(missing_ok=True)
