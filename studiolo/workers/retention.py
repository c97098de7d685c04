"""The retention sweeper: every `retention_sweep_seconds`, the door's sweep of every
project's expired evidence (docs/operations.md, "Retention and deletion"), as the service
itself (the `retention.swept` events have no actor). Started and stopped with the app."""

from __future__ import annotations

import logging
import threading
from typing import Any

from studiolo.service import Coordinator, SweepReport
from studiolo.workers.lifetime import for_app_lifetime

__all__ = ["Sweeper", "mount_sweeper"]

log = logging.getLogger(__name__)


class Sweeper:
    """Sweeps on a timer (the first sweep one interval after start); a failed sweep is logged
    and tried again at the next tick, never fatal."""

    def __init__(self, door: Coordinator, interval: float) -> None:
        self.door, self.interval = door, interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None

    def sweep_once(self) -> list[SweepReport]:
        try:
            return self.door.sweep_retention(None)
        except Exception:
            log.exception("retention sweep failed; trying again in %.0f s", self.interval)
            return []

    def start(self) -> None:
        if self._thread is None and self.interval > 0:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="studiolo-retention", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sweep_once()


def mount_sweeper(app: Any, door: Coordinator, interval: float) -> Sweeper:
    """Run a sweeper for the app's lifetime (`app.state.sweeper`)."""
    sweeper = Sweeper(door, interval)
    app.state.sweeper = sweeper
    for_app_lifetime(app, sweeper)
    return sweeper
