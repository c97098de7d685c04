"""`StoreHooks`: what the store reports as it works, to whoever watches (`studiolo.observe`).

The store calls these after the fact and never waits on them; the defaults do nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from studiolo.core.model import Event

__all__ = ["StoreHooks"]


class StoreHooks:
    def committed(self, events: Sequence[Event]) -> None:
        """A write committed (durably, unless volatile) and appended these events."""

    def group_committed(self, size: int, waited: float) -> None:
        """A group of `size` writes committed; its oldest waited `waited` s in the queue."""

    def retried(self) -> None:
        """A transaction failed to serialize (or found a dead connection) and runs again."""
