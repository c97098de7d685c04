"""The two requesters, each woken by the remote's terminal status event on a virtual clock.

The naive requester trusts the terminal state: it finalizes the moment the event arrives,
as the record's requester did. The quiescence requester runs
:func:`studiolo.core.quiescence.verify_and_quiesce` — the very function the service uses —
with reads, downloads, signature check, clock and sleep bound to the simulated remote.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from studiolo.a2a_study.endpoint import Endpoint, Snapshot, VirtualClock
from studiolo.a2a_study.model import Params
from studiolo.a2a_study.remote import PINNED_KEY, RemoteTask, key_secret
from studiolo.core.quiescence import (
    ArtifactIntegrityError,
    Channel,
    OutcomeKind,
    QuiescencePolicy,
    RemoteTaskView,
    SignedArtifact,
    TaskState,
    verify_and_quiesce,
)

__all__ = ["REQUESTERS", "Decision", "Kind", "Requester", "naive", "policy_for", "quiescence"]


class Kind(StrEnum):
    FINALIZED = "finalized"
    INTEGRITY_FAILED = "integrity-failed"
    INDETERMINATE = "indeterminate"


@dataclass(frozen=True)
class Decision:
    """What a requester decided, and when (virtual ms). ``payloads``: the artifact bytes it
    finalized with; ``code``: the integrity error's code, or the indeterminate reason."""

    kind: Kind
    at_ms: int
    payloads: Mapping[str, bytes] = field(default_factory=lambda: MappingProxyType({}))
    code: str = ""


Requester = Callable[[RemoteTask, Params], Decision]


def naive(task: RemoteTask, params: Params) -> Decision:
    """Trust the terminal state: finalize on the event, with whatever the task carries."""
    del params  # it neither reads nor fetches before finalizing
    return Decision(Kind.FINALIZED, task.terminal_ms)


def policy_for(params: Params) -> QuiescencePolicy:
    return QuiescencePolicy(
        bound=params.bound_s,
        initial_delay=params.backoff_initial_s,
        factor=params.backoff_factor,
        max_delay=params.backoff_max_s,
        confirm_interval=params.confirm_interval_s,
        manifest_required=frozenset(TaskState(state) for state in params.manifest_required),
    )


def quiescence(task: RemoteTask, params: Params) -> Decision:
    """Enter awaiting-artifact-quiescence on the event; decide as the core decides."""
    clock = VirtualClock(task.terminal_ms)
    endpoint = Endpoint(task, params, clock)
    try:
        outcome = verify_and_quiesce(
            lambda: _view(endpoint.get_task()),
            lambda artifact: endpoint.download(artifact.artifact_id),
            _pinned_signature,
            clock,
            clock.sleep,
            policy_for(params),
            since=clock(),
        )
    except ArtifactIntegrityError as error:
        return Decision(Kind.INTEGRITY_FAILED, clock.ms, code=error.code)
    if outcome.kind is OutcomeKind.QUIESCED:
        return Decision(Kind.FINALIZED, clock.ms, MappingProxyType(dict(outcome.payloads)))
    return Decision(Kind.INDETERMINATE, clock.ms, code=outcome.reason)


REQUESTERS: Mapping[str, Requester] = MappingProxyType({"naive": naive, "quiescence": quiescence})


def _view(snapshot: Snapshot) -> RemoteTaskView:
    """A ``GetTask`` answer as the core reads it: the signed manifest's entries, its digest."""
    state = TaskState.from_wire(snapshot.state)
    if snapshot.signed_manifest is None:
        return RemoteTaskView(snapshot.task_id, state)
    manifest = json.loads(json.loads(snapshot.signed_manifest)["manifest"])
    entries = tuple(
        SignedArtifact(
            artifact_id=entry["artifact_id"],
            name=entry["name"],
            sha256=entry["sha256"],
            size=entry["size"],
            channel=Channel(entry["channel"]),
            location=entry["location"],
        )
        for entry in manifest["artifacts"]
    )
    listed = {entry.artifact_id for entry in entries}
    return RemoteTaskView(
        task_id=snapshot.task_id,
        state=state,
        artifacts=entries,
        manifest_digest=hashlib.sha256(snapshot.signed_manifest).hexdigest(),
        manifest_task_id=manifest["task_id"],
        signed_manifest=snapshot.signed_manifest,
        unsigned=tuple(sorted(set(snapshot.inline) - listed)),
    )


def _pinned_signature(view: RemoteTaskView) -> bool:
    """The manifest is signed by the key pinned at delegation (and only that key)."""
    signed = json.loads(view.signed_manifest)
    if signed["kid"] != PINNED_KEY:
        return False
    expected = hmac.new(key_secret(PINNED_KEY), signed["manifest"].encode(), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, signed["signature"])
