"""The authentication cache: token hash → principal, valid for one *generation*.

Every change that could end a token's or a grant's power (a token revoked or rotated, a grant
revoked, a principal's key replaced) bumps `meta.auth_generation` in the same transaction
(the store does it, so no path forgets). A revocation that has returned must be refused by
the next request of every process sharing the ledger; two kinds of generation give that:

- SQLite on a file: the ledger's *auth signal* (`studiolo.store.authsignal`), a counter
  beside the ledger that the store bumps after such a transaction commits and before it
  returns. An entry is filled under the counter's value read before its snapshot and used
  while the counter keeps that value: a cached token costs no read of the ledger (and the
  HTTP face checks it on the event loop, with no threadpool hop).
- Otherwise (PostgreSQL, whose replicas share no memory): `authenticate` reads the
  generation and the incarnation in the snapshot it authenticates in; an entry cached
  under another generation is never used — one small read instead of the token lookup.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable

from studiolo.core.model import Principal

__all__ = ["AuthCache"]


class AuthCache:
    """Bounded and thread-safe; a new generation empties it."""

    def __init__(self, max_entries: int = 100_000) -> None:
        self._max = max_entries
        self._generation: Hashable = None
        self._entries: dict[str, Principal] = {}
        self._lock = threading.Lock()

    def get(self, token_hash: str, generation: Hashable) -> Principal | None:
        with self._lock:
            if generation != self._generation:
                return None
            return self._entries.get(token_hash)

    def put(self, token_hash: str, generation: Hashable, principal: Principal) -> None:
        with self._lock:
            if generation != self._generation:
                self._generation, self._entries = generation, {}
            elif len(self._entries) >= self._max:
                self._entries.pop(next(iter(self._entries)))  # the oldest entry
            self._entries[token_hash] = principal

    @property
    def max_entries(self) -> int:
        return self._max

    def __len__(self) -> int:
        return len(self._entries)
