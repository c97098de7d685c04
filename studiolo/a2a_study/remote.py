"""The fault-injecting remote agent (the other organisation), one task at a time.

``draw_task`` draws a task's whole history from its own random stream (seeded by the study
seed and the task's index, every variate drawn in a fixed order whatever the branch), so a
task is the same whichever tasks run beside it. A :class:`RemoteTask` is a timeline of
events on a virtual clock: the terminal state, committed together with its inline and URL
artifacts and the signed manifest (or, with ``manifest_lag_rate``, those a moment after it, as
the a2a-sdk emits them when an executor completes before adding artifacts); and, for a bundle
over the detached threshold, a delivery on the detached channel (or none: a lost artifact).

Artifact bytes are modelled by a short token per artifact (sizes only set transfer times);
SHA-256 is computed over the token. A manifest entry's signature is HMAC-SHA256 under the
signing key's secret: the study models *which* key signed, not Ed25519.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import random
from dataclasses import dataclass
from functools import cache

from studiolo.a2a_study.model import MIB, Delivery, Params, Tamper, Terminal

__all__ = [
    "PINNED_KEY",
    "UNPINNED_KEY",
    "RemoteArtifact",
    "RemoteTask",
    "draw_task",
    "key_secret",
    "manifest_bytes",
    "sign",
]

PINNED_KEY = "org-b/artifacts-2026"  # the key pinned for the remote organisation at delegation
UNPINNED_KEY = "org-b/unknown"  # a key the requester never pinned


@cache
def key_secret(key_id: str) -> bytes:
    return hashlib.sha256(b"studiolo.a2a_study key\0" + key_id.encode()).digest()


def sign(key_id: str, message: bytes) -> str:
    """The modelled signature (HMAC-SHA256 under the key's secret), hex."""
    return hmac.new(key_secret(key_id), message, hashlib.sha256).hexdigest()


@dataclass(frozen=True, slots=True)
class RemoteArtifact:
    """One declared artifact: what the manifest says, and what the channel delivers when."""

    artifact_id: str
    name: str
    size: int  # the modelled size (transfer times); the token is what is hashed
    delivery: Delivery
    available_ms: int | None  # when it becomes retrievable; None: never
    content: bytes  # the bytes the channel delivers (tampered or not)
    genuine: bytes  # the bytes the remote signed

    def retrievable(self, now_ms: int) -> bool:
        return self.available_ms is not None and self.available_ms <= now_ms


@dataclass(frozen=True, slots=True)
class RemoteTask:
    """One remote task's timeline and its signed manifest (``manifest`` bytes, ``key_id``)."""

    index: int
    task_id: str
    terminal: Terminal
    terminal_ms: int
    artifacts: tuple[RemoteArtifact, ...]
    tamper: Tamper
    key_id: str
    manifest: bytes
    manifest_ms: int  # when the signed manifest (and the inline artifacts) can be read

    @property
    def detached(self) -> bool:
        return any(a.delivery is Delivery.DETACHED for a in self.artifacts)

    @property
    def late(self) -> bool:
        """The injected race: the terminal state precedes an artifact (or one never comes)."""
        return not all(a.retrievable(self.terminal_ms) for a in self.artifacts)

    @property
    def lost(self) -> bool:
        return any(a.available_ms is None for a in self.artifacts)

    @property
    def signature(self) -> str:
        return sign(self.key_id, self.manifest)


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def _lognormal(rng: random.Random, median: float, sigma: float) -> float:
    return median * math.exp(sigma * rng.gauss(0.0, 1.0))


@dataclass(frozen=True, slots=True)
class _Draw:
    """Every variate of one task, drawn in one fixed order."""

    work_s: float
    terminal_u: float
    bundle_bytes: int
    attachments: tuple[int, ...]
    finish_s: float
    queue_s: float
    lost_u: float
    tamper_u: float
    tamper_kind_u: float
    tamper_target_u: float
    manifest_lag_u: float
    manifest_lag_s: float


def _draw(params: Params, rng: random.Random) -> _Draw:
    work_s = _lognormal(rng, params.work_median_s, params.work_sigma)
    terminal_u = rng.random()
    bundle = int(_lognormal(rng, params.bundle_median_mib, params.bundle_sigma) * MIB)
    count = rng.randint(0, params.max_attachments)
    median, sigma = params.attachment_median_kib, params.attachment_sigma
    sizes = [int(_lognormal(rng, median, sigma) * 1024) for _ in range(params.max_attachments)]
    return _Draw(
        work_s=work_s,
        terminal_u=terminal_u,
        bundle_bytes=max(1, bundle),
        attachments=tuple(max(1, s) for s in sizes[:count]),
        finish_s=_lognormal(rng, params.finish_median_s, params.finish_sigma),
        queue_s=_lognormal(rng, params.queue_median_s, params.queue_sigma),
        lost_u=rng.random(),
        tamper_u=rng.random(),
        tamper_kind_u=rng.random(),
        tamper_target_u=rng.random(),
        manifest_lag_u=rng.random(),
        manifest_lag_s=_lognormal(rng, params.manifest_lag_median_s, params.manifest_lag_sigma),
    )


def _terminal(params: Params, u: float) -> Terminal:
    if u < params.failed_rate:
        return Terminal.FAILED
    if u < params.failed_rate + params.canceled_rate:
        return Terminal.CANCELED
    return Terminal.COMPLETED


def _delivery(params: Params, size: int) -> Delivery:
    if size > params.detached_threshold:
        return Delivery.DETACHED
    return Delivery.INLINE if size <= params.inline_limit else Delivery.URL


def _detached_arrival(params: Params, draw: _Draw, size: int, terminal_ms: int) -> int | None:
    """When a detached artifact is retrievable: handed over before the end, pushed, queued."""
    if draw.lost_u < params.lost_rate:
        return None
    handed_over = terminal_ms - _ms(draw.finish_s)
    transfer = _ms(size / (params.push_mib_s * MIB))
    return handed_over + transfer + _ms(draw.queue_s)


def _tamper(params: Params, draw: _Draw) -> Tamper:
    if draw.tamper_u >= params.tamper_rate:
        return Tamper.NONE
    return Tamper.BYTES if draw.tamper_kind_u < 0.5 else Tamper.UNPINNED_KEY


def _artifact(
    task_id: str, name: str, size: int, delivery: Delivery, available_ms: int | None, tamper: Tamper
) -> RemoteArtifact:
    artifact_id = f"{task_id}/{name}"
    genuine = f"{artifact_id}:{size}".encode()
    content = _flip_last_bit(genuine) if tamper is Tamper.BYTES else genuine
    return RemoteArtifact(artifact_id, name, size, delivery, available_ms, content, genuine)


def _flip_last_bit(data: bytes) -> bytes:
    """Same size, other bytes: only the digest can tell."""
    return data[:-1] + bytes([data[-1] ^ 1])


def manifest_bytes(task_id: str, artifacts: tuple[RemoteArtifact, ...]) -> bytes:
    """The manifest the remote signs: every artifact with the digest and size of its bytes."""
    entries = [
        {
            "artifact_id": a.artifact_id,
            "name": a.name,
            "sha256": hashlib.sha256(a.genuine).hexdigest(),
            "size": len(a.genuine),
            "channel": a.delivery.value,
            "location": None if a.delivery is Delivery.INLINE else f"https://org-b.example/{a.artifact_id}",
        }
        for a in artifacts
    ]
    document = {"task_id": task_id, "artifacts": entries}
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def draw_task(params: Params, seed: int, index: int) -> RemoteTask:
    """Task ``index`` of the world ``seed``: the same task whatever else is drawn."""
    draw = _draw(params, random.Random(f"studiolo.a2a_study/{seed}/{index}"))
    task_id = f"remote-{seed}-{index:06d}"
    terminal_ms = _ms(draw.work_s)
    tamper = _tamper(params, draw)
    sizes = (draw.bundle_bytes, *draw.attachments)
    target = min(len(sizes) - 1, int(draw.tamper_target_u * len(sizes)))
    lag = _ms(draw.manifest_lag_s) if draw.manifest_lag_u < params.manifest_lag_rate else 0
    manifest_ms = terminal_ms + lag
    artifacts = []
    for position, size in enumerate(sizes):
        delivery = _delivery(params, size)
        detached = delivery is Delivery.DETACHED
        arrival = _detached_arrival(params, draw, size, terminal_ms) if detached else manifest_ms
        fault = tamper if position == target else Tamper.NONE
        name = "bundle" if position == 0 else f"attachment-{position}"
        artifacts.append(_artifact(task_id, name, size, delivery, arrival, fault))
    declared = tuple(artifacts)
    key_id = UNPINNED_KEY if tamper is Tamper.UNPINNED_KEY else PINNED_KEY
    return RemoteTask(
        index=index,
        task_id=task_id,
        terminal=_terminal(params, draw.terminal_u),
        terminal_ms=terminal_ms,
        artifacts=declared,
        tamper=tamper,
        key_id=key_id,
        manifest=manifest_bytes(task_id, declared),
        manifest_ms=manifest_ms,
    )
