"""The Activity page's audit-chain status without a whole walk per page load.

The chain is walked whole at most once per `whole_every` seconds while it verifies; in
between, a load reads only the events appended since the last verified head
(`Coordinator.verify_audit(since)`). One walk at a time: concurrent loads wait for it and
then read only the new events.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from studiolo.core.model import Principal
from studiolo.service import Coordinator
from studiolo.service.views import AuditReport

__all__ = ["ChainCache"]


class ChainCache:
    def __init__(self, whole_every: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.whole_every = whole_every
        self._clock = clock
        self._lock = threading.Lock()
        self._report: AuditReport | None = None
        self._whole_at = 0.0

    def status(self, door: Coordinator, caller: Principal, project_id: str) -> AuditReport:
        """The chain's status for a reader of `project_id` (authorized by the door every time)."""
        with self._lock:
            now = self._clock()
            last = self._report
            if last is not None and last.ok and now - self._whole_at < self.whole_every:
                report = door.chain_status(caller, project_id, since=last)
            else:  # the first load, the interval passed, or the chain was broken: walk it whole
                report = door.chain_status(caller, project_id)
                self._whole_at = now
            self._report = report
            return report
