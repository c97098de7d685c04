"""The auth signal of a SQLite ledger: a counter in `<ledger>.auth-signal`, mapped into every
process that opens the ledger, which a write that ends a token's or a grant's power bumps
after its COMMIT and before it returns (`Store.write`, `Store.exclusive`).

What it is for: an authentication cache (`studiolo.service._auth`) that answers a cached
token without reading the ledger, and still refuses it on the next request, in every process,
once its revocation has returned. An entry is filled under the counter value read *before*
the snapshot it was read from, and used only while the counter still has that value.

Why that is enough. A revocation R commits, then bumps the counter from k to k+1 (a locked
increment: the counter only grows), then returns. A request that starts after R returned
reads a value ≥ k+1. An entry it may use was filled under that same value, read before the
entry's snapshot; a value ≥ k+1 was only there after R's bump, which came after R's COMMIT,
so that snapshot saw R. An entry filled under a value ≤ k is not used. Readers never lock:
the counter is one aligned 64-bit word, written and read by single machine stores and loads.

Its reach is SQLite's own: one host (the WAL's shared memory, `<ledger>-shm`, needs the same),
and processes that run this code. PostgreSQL replicas run on several hosts; there the
authentication reads `meta.auth_generation` instead (`signal` is None). Like `-shm`, the file
must not be deleted while a process has the ledger open. A process that cannot open it
cannot write (`ensure`) and authenticates by reading the ledger (`value` is None).
"""

from __future__ import annotations

import ctypes
import fcntl
import mmap
import os
import threading

__all__ = ["AuthSignal"]

_SIZE = 8


class AuthSignal:
    """The counter, mapped on first use."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._word: ctypes.c_uint64 | None = None
        self._fd = -1
        self._lock = threading.Lock()  # flock does not exclude the threads of one process

    def value(self) -> int | None:
        """The counter now; None if the file cannot be mapped (read the ledger instead)."""
        word = self._word
        if word is None:
            try:
                word = self._map()
            except OSError:
                return None
        return int(word.value)

    def ensure(self) -> None:
        """Map the file or raise: a process that may revoke must be able to bump."""
        if self._word is None:
            self._map()

    def bump(self) -> None:
        """Move the counter on (after the revoking COMMIT, before the revocation returns)."""
        word = self._word or self._map()
        with self._lock:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                word.value = word.value + 1
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _map(self) -> ctypes.c_uint64:
        with self._lock:
            if self._word is not None:
                return self._word
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                if os.fstat(fd).st_size < _SIZE:
                    os.ftruncate(fd, _SIZE)  # growing a file never changes its first bytes
                view = mmap.mmap(fd, _SIZE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            except BaseException:
                os.close(fd)
                raise
            self._fd = fd
            self._word = ctypes.c_uint64.from_buffer(view)  # kept for the life of the process
            return self._word
