"""A pipe from one run of a check to the runner: no path to find, nothing on disk to rewrite.

The write end is inherited by the check's first process as the fd named in
`$STUDIOLO_CHANNEL_FD`; the runner keeps only the read end and drains it while the check
runs (bounded: past `limit` bytes the rest is read and dropped, and `overflowed` says so).
A process of the check can still write to the fd it inherited — the channel hides a report
from a candidate that looks for a *file*, not from code that runs in the reporting process
(docs/verifiers.md).
"""

from __future__ import annotations

import os
import threading

__all__ = ["Channel"]


class Channel:
    ENV = "STUDIOLO_CHANNEL_FD"

    def __init__(self, limit: int = 16 * 1024 * 1024) -> None:
        self._read, self.write_fd = os.pipe()
        os.set_inheritable(self.write_fd, True)
        self._limit = limit
        self._chunks: list[bytes] = []
        self._size = 0
        self.overflowed = False
        self._thread = threading.Thread(target=self._drain, name="studiolo-channel", daemon=True)

    def started(self) -> None:
        """The child holds the write end now: drop ours (so EOF comes when the check ends)."""
        os.close(self.write_fd)
        self._thread.start()

    def data(self, wait: float = 5.0) -> bytes:
        """Everything the check wrote (up to the limit); call after every process has died."""
        self._thread.join(wait)
        if self._thread.is_alive():  # a writer outlived the check (only without isolation)
            self.overflowed = True
        return b"".join(self._chunks)

    def close(self) -> None:
        if not self._thread.is_alive():
            os.close(self._read)

    def _drain(self) -> None:
        while chunk := os.read(self._read, 1 << 16):
            if self._size + len(chunk) > self._limit:
                self.overflowed = True
                continue
            self._chunks.append(chunk)
            self._size += len(chunk)
