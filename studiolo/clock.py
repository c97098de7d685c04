"""A clock moved by hand: injected wherever a story, a study or a test needs lease expiry
without waiting. The service's real clock is `time.time`."""

from __future__ import annotations

__all__ = ["ManualClock"]


class ManualClock:
    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.t = start

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds
