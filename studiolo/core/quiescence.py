"""The two-phase artifact quiescence check (seed 003): never trust a remote terminal state
while signed artifacts are still in flight.

A remote A2A task's terminal state and the delivery of its artifacts are two independent
facts. On a terminal state the requester does not finalize: it enumerates every artifact the
signed manifest declares (inline, URL parts, detached), fetches each with bounded retries and
backoff, checks SHA-256 and size, has the manifest signature checked against the keys pinned
at delegation, and then, at least `confirm_interval` after the first, reads the task again.
Only when the two reads agree (same terminal state, same manifest digest) is the result
*quiesced*. This holds for every terminal state (completed, failed, canceled, rejected): by
default each needs a signed manifest, and what it declares must arrive and verify.

Bytes shorter than declared are *not yet quiescent* (a chunked artifact still arriving, a file
served before it is complete): the check waits for them, to the bound. Only a digest mismatch
of the declared number of bytes, more bytes than signed, or a manifest that does not verify
raises `ArtifactIntegrityError`; past the policy's bound the outcome is *indeterminate* (an
operator decides).

Everything here is pure: I/O, clock and sleep are injected, so the requester worker and the
simulation on a virtual clock (`studiolo a2a-study`) drive the very same decisions.

Stable entry point::

    verify_and_quiesce(read_view, fetch, verify_signature, clock, sleep, policy, *, since=None)
        -> Outcome            (kind QUIESCED or INDETERMINATE)
        raises ArtifactIntegrityError

    read_view()              -> RemoteTaskView     one read of the remote task (GetTask + manifest)
    fetch(SignedArtifact)    -> bytes | None the artifact's bytes, or None while not available;
                                             transport errors are the adapter's to turn into
                                             None. Fewer bytes than declared: not yet there;
                                             the declared number: checked strictly.
    verify_signature(RemoteTaskView) -> bool       the manifest (`view.signed_manifest`) is signed by
                                             a pinned key; the adapter may raise
                                             ArtifactIntegrityError itself for a precise code
    clock()                  -> float        seconds, monotonic (virtual in the simulation)
    sleep(float)             -> None         wait that long (may return early on a hint)
    policy                   QuiescencePolicy bound, retries, backoff, confirming interval, caps
    since                    clock() value the wait began at (a resumed wait keeps its bound)
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

__all__ = [
    "ArtifactIntegrityError",
    "Channel",
    "Outcome",
    "OutcomeKind",
    "QuiescencePolicy",
    "Readiness",
    "RemoteTaskView",
    "SignedArtifact",
    "TaskState",
    "agree",
    "arrived",
    "assess",
    "backoff_delay",
    "check_artifact",
    "verify_and_quiesce",
]


class TaskState(StrEnum):
    """A2A v1.0 task states (the wire names without the `TASK_STATE_` prefix)."""

    SUBMITTED = "submitted"
    WORKING = "working"
    INPUT_REQUIRED = "input-required"
    AUTH_REQUIRED = "auth-required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"
    REJECTED = "rejected"
    UNKNOWN = "unknown"

    @property
    def terminal(self) -> bool:
        return self in _TERMINAL

    @classmethod
    def from_wire(cls, name: str) -> TaskState:
        """`TASK_STATE_COMPLETED` / `completed` / `input_required` → the state (else UNKNOWN)."""
        key = name.removeprefix("TASK_STATE_").lower().replace("_", "-")
        try:
            return cls(key)
        except ValueError:
            return cls.UNKNOWN


_TERMINAL = frozenset({TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED})


class Channel(StrEnum):
    """How an artifact's bytes travel: in the task, by a URL part, or detached (named only in
    the signed manifest, fetched from its location)."""

    INLINE = "inline"
    URL = "url"
    DETACHED = "detached"


@dataclass(frozen=True)
class SignedArtifact:
    """One entry of the signed manifest: what the bytes must be, and where they come from."""

    artifact_id: str
    name: str
    sha256: str  # 64 lowercase hex digits
    size: int
    channel: Channel
    location: str | None = None  # the URL for `url` / `detached`; None for `inline`


@dataclass(frozen=True)
class RemoteTaskView:
    """One read of the remote task: its state and its signed manifest, if any yet.

    `artifacts` are the manifest's entries (empty without a manifest); `manifest_digest` is
    the SHA-256 of the signed manifest bytes (`signed_manifest`), None while there is none;
    `manifest_task_id` is the task the manifest says it belongs to; `unsigned` names the
    artifacts the task carries that the manifest does not list."""

    task_id: str
    state: TaskState
    artifacts: tuple[SignedArtifact, ...] = ()
    manifest_digest: str | None = None
    manifest_task_id: str | None = None
    signed_manifest: bytes = b""
    unsigned: tuple[str, ...] = ()


class ArtifactIntegrityError(Exception):
    """An artifact or manifest is not what was signed (or not signed by a pinned key).

    `code`: `hash_mismatch`, `size_mismatch`, `bad_signature`, `wrong_task`, `oversize`,
    `invalid_manifest`. The evidence (`view`, `artifact`, `actual_sha256`, `actual_size`, the
    mismatching `data`) is kept on the exception so the caller can record it."""

    def __init__(
        self,
        code: str,
        detail: str,
        *,
        view: RemoteTaskView | None = None,
        artifact: SignedArtifact | None = None,
        actual_sha256: str | None = None,
        actual_size: int | None = None,
        data: bytes | None = None,
    ) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail
        self.view = view
        self.artifact = artifact
        self.actual_sha256 = actual_sha256
        self.actual_size = actual_size
        self.data = data  # the bytes that did not match (evidence)


@dataclass(frozen=True)
class QuiescencePolicy:
    """`bound`: seconds after which the outcome is indeterminate; `max_rounds`: read/fetch
    rounds, likewise; backoff `initial * factor**n` capped at `max_delay`.

    `confirm_interval`: the least time between the read whose artifacts all verified and the
    read that must agree with it. It is the window in which a remote that is still changing
    (a manifest replaced, an artifact added, the state moved) is caught; a change that lands
    later than that after a stable-looking read is not. `manifest_required`: the terminal
    states that are never final without a signed manifest (all of them by default: a remote
    that fails or cancels without ever signing one ends indeterminate at the bound)."""

    bound: float = 600.0
    max_rounds: int = 1000
    initial_delay: float = 1.0
    factor: float = 2.0
    max_delay: float = 60.0
    max_artifact_size: int = 64 * 1024 * 1024
    max_artifacts: int = 256
    confirm_interval: float = 2.0
    manifest_required: frozenset[TaskState] = _TERMINAL

    def __post_init__(self) -> None:
        delays = (self.bound, self.initial_delay, self.max_delay, self.confirm_interval)
        if min(delays) < 0 or self.max_rounds < 1:
            raise ValueError("quiescence policy: bound, delays, interval >= 0 and max_rounds >= 1")
        if self.factor < 1:
            raise ValueError("quiescence policy: backoff factor >= 1")


class Readiness(StrEnum):
    """What one read allows: wait for a terminal state, for the manifest, for unsigned
    artifacts to be covered, or go ahead and fetch."""

    NOT_TERMINAL = "not_terminal"
    NO_MANIFEST = "no_manifest"
    UNSIGNED_ARTIFACTS = "unsigned_artifacts"
    READY = "ready"


class OutcomeKind(StrEnum):
    QUIESCED = "quiesced"
    INDETERMINATE = "indeterminate"


@dataclass(frozen=True)
class Outcome:
    """QUIESCED: `view` is the second of two agreeing reads and `payloads` holds every
    declared artifact's verified bytes. INDETERMINATE: `reason` says what was still waited
    for at the bound (a `Readiness` value, `missing_artifacts` or `reads_disagree`), `missing`
    the artifacts not yet there and `verified` those of the last read that did verify (an
    operator may finalize with them); `payloads` stays empty."""

    kind: OutcomeKind
    view: RemoteTaskView | None
    payloads: Mapping[str, bytes] = field(default_factory=dict)
    reason: str = ""
    rounds: int = 0
    elapsed: float = 0.0
    missing: tuple[str, ...] = ()
    verified: Mapping[str, bytes] = field(default_factory=dict)  # INDETERMINATE: what did verify


def assess(view: RemoteTaskView, policy: QuiescencePolicy) -> Readiness:
    """What this read allows. Raises ArtifactIntegrityError for a manifest that is bound to
    another task, over the caps, or that lists one artifact twice."""
    if not view.state.terminal:
        return Readiness.NOT_TERMINAL
    if view.manifest_digest is None:
        return Readiness.NO_MANIFEST if view.state in policy.manifest_required else _unsigned(view)
    if view.manifest_task_id != view.task_id:
        raise ArtifactIntegrityError(
            "wrong_task", f"manifest is for task {view.manifest_task_id!r}", view=view
        )
    _check_entries(view, policy)
    return _unsigned(view)


def _unsigned(view: RemoteTaskView) -> Readiness:
    return Readiness.UNSIGNED_ARTIFACTS if view.unsigned else Readiness.READY


def _check_entries(view: RemoteTaskView, policy: QuiescencePolicy) -> None:
    if len(view.artifacts) > policy.max_artifacts:
        raise ArtifactIntegrityError("oversize", f"{len(view.artifacts)} artifacts declared", view=view)
    seen: set[str] = set()
    for a in view.artifacts:
        if a.artifact_id in seen:
            raise ArtifactIntegrityError("invalid_manifest", f"{a.artifact_id!r} listed twice", view=view)
        seen.add(a.artifact_id)
        if a.size < 0 or a.size > policy.max_artifact_size:
            raise ArtifactIntegrityError(
                "oversize", f"{a.artifact_id!r} declares {a.size} bytes", view=view, artifact=a
            )


def arrived(artifact: SignedArtifact, data: bytes | None) -> bool:
    """Has the declared number of bytes (or more) arrived? Fewer is not yet quiescent: a chunked
    artifact still growing, a file served before it is complete. Never an integrity verdict."""
    return data is not None and len(data) >= artifact.size


def check_artifact(artifact: SignedArtifact, data: bytes, view: RemoteTaskView | None = None) -> None:
    """The bytes are exactly what the manifest signed (size, then SHA-256), else raise. Call it
    on bytes that `arrived`: more bytes than signed can never become the signed bytes."""
    actual = hashlib.sha256(data).hexdigest()
    if len(data) != artifact.size:
        code, detail = "size_mismatch", f"{artifact.artifact_id!r}: {len(data)} bytes, signed {artifact.size}"
    elif actual != artifact.sha256:
        code, detail = "hash_mismatch", f"{artifact.artifact_id!r}: sha256 {actual}, signed {artifact.sha256}"
    else:
        return
    raise ArtifactIntegrityError(
        code, detail, view=view, artifact=artifact, actual_sha256=actual, actual_size=len(data), data=data
    )


def agree(first: RemoteTaskView, second: RemoteTaskView) -> bool:
    """The two reads that finalize agree: same task, same terminal state, same manifest."""
    return (
        first.task_id == second.task_id
        and first.state.terminal
        and first.state is second.state
        and first.manifest_digest == second.manifest_digest
        and first.unsigned == second.unsigned
    )


def backoff_delay(policy: QuiescencePolicy, round_no: int) -> float:
    """Delay after round `round_no` (0-based): exponential, capped."""
    if round_no >= 64:
        return policy.max_delay
    return float(min(policy.max_delay, policy.initial_delay * policy.factor**round_no))


_Key = tuple[str, str, int]


def _key(a: SignedArtifact) -> _Key:
    return (a.artifact_id, a.sha256, a.size)


def _fetch_missing(
    view: RemoteTaskView, fetch: Callable[[SignedArtifact], bytes | None], have: dict[_Key, bytes]
) -> tuple[str, ...]:
    """Fetch every declared artifact not yet verified; return the ids still missing."""
    missing: list[str] = []
    for a in view.artifacts:
        if _key(a) in have:
            continue
        data = fetch(a)
        if data is None or not arrived(a, data):
            missing.append(a.artifact_id)
            continue
        check_artifact(a, data, view)
        have[_key(a)] = data
    return tuple(missing)


def _signature_ok(view: RemoteTaskView, verify_signature: Callable[[RemoteTaskView], bool]) -> None:
    if view.manifest_digest is not None and not verify_signature(view):
        raise ArtifactIntegrityError("bad_signature", "manifest not signed by a pinned key", view=view)


def verify_and_quiesce(
    read_view: Callable[[], RemoteTaskView],
    fetch: Callable[[SignedArtifact], bytes | None],
    verify_signature: Callable[[RemoteTaskView], bool],
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    policy: QuiescencePolicy,
    *,
    since: float | None = None,
) -> Outcome:
    """Run the two-phase check to a quiesced or indeterminate outcome (module docstring)."""
    start = clock() if since is None else since
    have: dict[_Key, bytes] = {}
    last: RemoteTaskView | None = None
    reason = ""
    missing: tuple[str, ...] = ()
    for round_no in range(policy.max_rounds):
        read_at = clock()
        last = read_view()
        reason, missing = _round(last, fetch, verify_signature, have, policy)
        if not reason:
            _confirm_wait(clock, sleep, read_at, policy.confirm_interval)
            second = read_view()
            if agree(last, second):
                payloads = {a.artifact_id: have[_key(a)] for a in second.artifacts}
                return Outcome(OutcomeKind.QUIESCED, second, payloads, "", round_no + 1, clock() - start)
            reason, last = "reads_disagree", second
        remaining = policy.bound - (clock() - start)
        if remaining <= 0 or round_no + 1 >= policy.max_rounds:
            verified = {a.artifact_id: have[_key(a)] for a in last.artifacts if _key(a) in have}
            return Outcome(
                OutcomeKind.INDETERMINATE, last, {}, reason, round_no + 1, clock() - start, missing, verified
            )
        sleep(min(backoff_delay(policy, round_no), remaining))
    raise AssertionError("unreachable: the last round returns")  # pragma: no cover


def _confirm_wait(
    clock: Callable[[], float], sleep: Callable[[float], None], read_at: float, interval: float
) -> None:
    """Let `interval` pass since the first read (fetching counts) before the confirming one."""
    left = interval - (clock() - read_at)
    if left > 0:
        sleep(left)


def _round(
    view: RemoteTaskView,
    fetch: Callable[[SignedArtifact], bytes | None],
    verify_signature: Callable[[RemoteTaskView], bool],
    have: dict[_Key, bytes],
    policy: QuiescencePolicy,
) -> tuple[str, tuple[str, ...]]:
    """One round on one read: '' when every artifact is verified, else what is waited for."""
    readiness = assess(view, policy)
    if readiness is Readiness.NOT_TERMINAL or readiness is Readiness.NO_MANIFEST:
        return readiness.value, ()
    _signature_ok(view, verify_signature)
    missing = _fetch_missing(view, fetch, have)
    if missing:
        return "missing_artifacts", missing
    if readiness is Readiness.UNSIGNED_ARTIFACTS:
        return readiness.value, ()
    return "", ()
