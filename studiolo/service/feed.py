"""Following projects' events with one read, not one per follower or per project.

A face that serves many followers of some projects (the HTTP event stream) reads their new
events together with `event_feed` and shows each follower only what its `EventAccess` lets
it see. An access is valid for one *auth generation* (`_auth.py`): every revocation bumps
it, and `event_feed` returns the generation it read at, so a face re-checks each follower
(`event_access` again, with its token re-authenticated) when the feed's generation moves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from studiolo.core.model import Action, Event, Principal
from studiolo.service._door import Context
from studiolo.service.views import visible_events
from studiolo.store import Tx

__all__ = ["EventAccess", "FeedBatch", "FeedOps"]


@dataclass(frozen=True)
class EventAccess:
    """What one caller may see of one project's events, as of one auth generation."""

    caller: Principal
    project_id: str
    generation: tuple[str, str]
    may_read: Callable[[str], bool] | None  # None: every path

    def visible(self, events: list[Event]) -> list[Event]:
        """Events naming a path outside the caller's read scope come `withheld`."""
        return visible_events(self.may_read, events)


@dataclass(frozen=True)
class FeedBatch:
    generation: tuple[str, str]  # the auth generation the events were read at
    upto: int  # every project event with seq ≤ upto is in this batch or before `after`
    events: list[Event]


class FeedOps:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def event_access(self, caller: Principal, project_id: str) -> EventAccess:
        """The caller may read the project's events (else NotFound / NotAuthorized)."""

        def run(tx: Tx) -> EventAccess:
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.READ)
            reader = self.ctx.path_reader(tx, caller, project_id)
            return EventAccess(caller, project_id, tx.access.auth_generation(), reader)

        return self.ctx.store.read(run)

    def event_feed(self, project_ids: Sequence[str], after: int, limit: int = 1000) -> FeedBatch:
        """The events of the named projects after `after`, in seq order, unfiltered: only for a
        face that shows each of them through an `EventAccess` of the returned generation."""

        def run(tx: Tx) -> FeedBatch:
            upto = tx.audit.last()[0]
            events = tx.audit.events_of(project_ids, after, limit)
            if len(events) == limit:
                upto = events[-1].seq
            return FeedBatch(tx.access.auth_generation(), upto, events)

        return self.ctx.store.read(run)
