"""The simulated conditions: the parameters of the remote agent and of its channels.

Every figure here is a modelling choice, not a measurement of the record's traffic. The
defaults were chosen *so that* the record's conditions come out (about 0.4% of tasks reach a
terminal state before an artifact is retrievable, all of them with an artifact over 8 MiB on
the detached channel; about 0.02% of artifacts never arrive); docs/a2a.md says so.

Times are integer milliseconds of virtual time; sizes are bytes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from studiolo.core.quiescence import QuiescencePolicy

__all__ = ["MIB", "Delivery", "Params", "Tamper", "Terminal"]

MIB = 1 << 20
_POLICY = QuiescencePolicy()


class Terminal(StrEnum):
    """The remote task's terminal state (A2A v1.0 names, lower case)."""

    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"


class Delivery(StrEnum):
    """How an artifact reaches the requester."""

    INLINE = "inline"  # bytes in the task record, committed with the state
    URL = "url"  # a URL part served by the task's own file server, committed with the state
    DETACHED = "detached"  # > 8 MiB: pushed through a separate artifact service, named in the manifest


class Tamper(StrEnum):
    """An injected integrity fault (applied to one artifact of the task)."""

    NONE = "none"
    BYTES = "bytes"  # the delivered bytes differ from the signed digest
    UNPINNED_KEY = "unpinned-key"  # signed by a key the requester did not pin


@dataclass(frozen=True)
class Params:
    """One simulated world. Changing any field changes the results file."""

    # the remote task: time from delegation to its terminal state, and the terminal mix
    work_median_s: float = 90.0
    work_sigma: float = 0.6
    failed_rate: float = 0.035
    canceled_rate: float = 0.015
    # the primary artifact (the signed bundle): log-normal size; above the threshold it is detached
    bundle_median_mib: float = 1.0
    bundle_sigma: float = 1.35
    detached_threshold: int = 8 * MIB
    inline_limit: int = 256 * 1024
    # 0-2 attachments per task (logs, summaries): small, inline or URL parts
    attachment_median_kib: float = 48.0
    attachment_sigma: float = 1.5
    max_attachments: int = 2
    # the detached channel: the bundle is handed to it before the task finishes; it is delivered
    # after a transfer (size / push rate) and a queueing delay with a heavy tail
    finish_median_s: float = 30.0
    finish_sigma: float = 0.5
    push_mib_s: float = 4.0
    queue_median_s: float = 2.0
    queue_sigma: float = 1.45
    lost_rate: float = 0.0065  # of detached artifacts: never delivered (about 0.02% of all artifacts)
    # integrity faults, per task
    tamper_rate: float = 0.001
    # the a2a-sdk ordering `complete()` then `add_artifact(...)`: the manifest and the inline
    # artifacts appear after the terminal state. Off by default (not one of the record's conditions)
    manifest_lag_rate: float = 0.0
    manifest_lag_median_s: float = 0.5
    manifest_lag_sigma: float = 1.0
    # the requester's network
    rtt_ms: int = 60
    fetch_mib_s: float = 8.0
    # the quiescence requester's policy: the core's defaults (bound before `indeterminate`, backoff,
    # the least time between the two reads that must agree, the states that need a signed manifest)
    bound_s: float = _POLICY.bound
    backoff_initial_s: float = _POLICY.initial_delay
    backoff_factor: float = _POLICY.factor
    backoff_max_s: float = _POLICY.max_delay
    confirm_interval_s: float = _POLICY.confirm_interval
    manifest_required: tuple[str, ...] = tuple(sorted(_POLICY.manifest_required))

    def document(self) -> dict[str, Any]:
        """The parameters as plain JSON values (for the results file)."""
        return asdict(self)
