"""The remote organisation as a requester reaches it, on a virtual clock.

:class:`VirtualClock` is the only time there is: a request is answered as the remote stands
at the instant it is sent, and then the clock moves by the round trip (and the transfer, for
a download). Sleeping moves the clock; nothing waits for real.

:class:`Endpoint` serves one :class:`~studiolo.a2a_study.remote.RemoteTask`: ``get_task`` is
A2A ``GetTask`` (state, and once published, the signed manifest and the inline artifacts);
``download`` fetches one artifact by id — an inline one costs nothing more (its bytes came
with the task), a URL part or a detached artifact costs a round trip and its transfer, and a
detached artifact not yet delivered (or never) is a 404 after a round trip.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from studiolo.a2a_study.model import MIB, Delivery, Params
from studiolo.a2a_study.remote import RemoteArtifact, RemoteTask

__all__ = ["WORKING", "Endpoint", "Snapshot", "VirtualClock"]

WORKING = "working"


class VirtualClock:
    """Integer milliseconds of virtual time; called, it answers seconds (the core's clock)."""

    def __init__(self, start_ms: int) -> None:
        self.ms = start_ms

    def __call__(self) -> float:
        return self.ms / 1000

    def sleep(self, seconds: float) -> None:
        self.ms += max(0, math.ceil(seconds * 1000))

    def spend(self, ms: int) -> None:
        self.ms += ms


@dataclass(frozen=True)
class Snapshot:
    """One ``GetTask`` answer: the state; from the terminal state on, the signed manifest
    (``{"kid", "manifest", "signature"}`` as bytes) and the inline artifacts' bytes."""

    task_id: str
    state: str
    signed_manifest: bytes | None
    inline: MappingProxyType[str, bytes]


class Endpoint:
    def __init__(self, task: RemoteTask, params: Params, clock: VirtualClock) -> None:
        self.task = task
        self.clock = clock
        self._rtt = params.rtt_ms
        self._rate = params.fetch_mib_s * MIB / 1000  # bytes per millisecond
        self._artifacts = {a.artifact_id: a for a in task.artifacts}
        self.reads = 0
        self.downloads = 0

    def get_task(self) -> Snapshot:
        now = self.clock.ms
        self.clock.spend(self._rtt)
        self.reads += 1
        if now < self.task.terminal_ms:
            return Snapshot(self.task.task_id, WORKING, None, MappingProxyType({}))
        if now < self.task.manifest_ms:
            return Snapshot(self.task.task_id, self.task.terminal.value, None, MappingProxyType({}))
        inline = {a.artifact_id: a.content for a in self.task.artifacts if a.delivery is Delivery.INLINE}
        return Snapshot(self.task.task_id, self.task.terminal.value, self._signed(), MappingProxyType(inline))

    def download(self, artifact_id: str) -> bytes | None:
        artifact = self._artifacts.get(artifact_id)
        if artifact is not None and artifact.delivery is Delivery.INLINE:
            return artifact.content if artifact.retrievable(self.clock.ms) else None
        now = self.clock.ms
        self.downloads += 1
        if artifact is None or not artifact.retrievable(now):
            self.clock.spend(self._rtt)
            return None
        self.clock.spend(self._rtt + self._transfer_ms(artifact))
        return artifact.content

    def _transfer_ms(self, artifact: RemoteArtifact) -> int:
        return math.ceil(artifact.size / self._rate)

    def _signed(self) -> bytes:
        document: dict[str, Any] = {
            "kid": self.task.key_id,
            "manifest": self.task.manifest.decode(),
            "signature": self.task.signature,
        }
        return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
