"""Delegating a Studiolo task to a remote A2A agent (the requester side, docs/a2a.md):
the trust anchor an admin pins per remote organisation, and the delegation's state machine.

    delegated ─▶ remote-working ─▶ awaiting-artifact-quiescence ─┬▶ finalized
        │              │                                         ├▶ refused        (contract)
        │              │                                         ├▶ integrity-failed
        │              │                                         ├▶ remote-failed
        │              │                                         ├▶ remote-canceled
        │              │                                         └▶ indeterminate ─┬▶ finalized
        └──────────────┴─▶ remote-failed (never sent / refused by the remote)      └▶ rejected

Pure values: no I/O, no clock, no SQL.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from studiolo.core.quiescence import TaskState

# Studiolo's A2A artifact-manifest extension: served by the A2A face, required of a remote.
MANIFEST_EXTENSION = "https://studiolo.dev/a2a/extensions/artifact-manifest/v1"
MANIFEST_ID = "artifact-manifest"

__all__ = [
    "MANIFEST_EXTENSION",
    "MANIFEST_ID",
    "TRANSITIONS",
    "RemoteDelegation",
    "RemoteFile",
    "RemoteOrg",
    "RemoteResult",
    "RemoteState",
    "can_move",
    "ended_state",
    "explicit_origin",
    "local_name",
    "origin_of",
    "parse_origins",
]


class RemoteState(StrEnum):
    DELEGATED = "delegated"
    REMOTE_WORKING = "remote-working"
    AWAITING = "awaiting-artifact-quiescence"
    FINALIZED = "finalized"
    REFUSED = "refused"  # quiesced, but the completion contract refused the result
    INTEGRITY_FAILED = "integrity-failed"
    INDETERMINATE = "indeterminate"
    REMOTE_FAILED = "remote-failed"
    REMOTE_CANCELED = "remote-canceled"
    REJECTED = "rejected"  # an operator rejected an indeterminate outcome

    @property
    def final(self) -> bool:
        return self in _FINAL

    @property
    def waiting(self) -> bool:
        """The requester worker has something to do (or to resume after a restart)."""
        return self in (RemoteState.DELEGATED, RemoteState.REMOTE_WORKING, RemoteState.AWAITING)


_FINAL = frozenset(
    {
        RemoteState.FINALIZED,
        RemoteState.REFUSED,
        RemoteState.INTEGRITY_FAILED,
        RemoteState.REMOTE_FAILED,
        RemoteState.REMOTE_CANCELED,
        RemoteState.REJECTED,
    }
)

_S = RemoteState
TRANSITIONS: Mapping[RemoteState, frozenset[RemoteState]] = {
    _S.DELEGATED: frozenset({_S.REMOTE_WORKING, _S.REMOTE_FAILED}),
    _S.REMOTE_WORKING: frozenset({_S.AWAITING, _S.REMOTE_FAILED}),
    _S.AWAITING: frozenset(
        {
            _S.FINALIZED,
            _S.REFUSED,
            _S.INTEGRITY_FAILED,
            _S.INDETERMINATE,
            _S.REMOTE_FAILED,
            _S.REMOTE_CANCELED,
        }
    ),
    _S.INDETERMINATE: frozenset({_S.FINALIZED, _S.REFUSED, _S.REJECTED}),
}


def can_move(src: RemoteState, dst: RemoteState) -> bool:
    """Is `src → dst` an edge of the delegation state machine? Final states have none."""
    return dst in TRANSITIONS.get(src, frozenset())


def ended_state(remote: TaskState) -> RemoteState | None:
    """The delegation state a quiesced non-completed remote task ends in (None: completed)."""
    if remote is TaskState.COMPLETED:
        return None
    if remote is TaskState.CANCELED:
        return RemoteState.REMOTE_CANCELED
    return RemoteState.REMOTE_FAILED  # failed, rejected


@dataclass(frozen=True)
class RemoteOrg:
    """A remote organisation's trust anchor in one project, configured by an admin.

    `keys` are the pinned Ed25519 public keys (kid → base64url) that may sign the remote's
    Agent Card and artifact manifests; nothing else is trusted (no trust on first use).
    `agent_id` holds the local attempt while the remote works; `verifier_id` is the admitted
    verifier whose observation is the remote's signed manifest, for the checker `checker`.
    `origins` (`scheme://host:port`) are the only places the service sends requests for it."""

    id: str
    project_id: str
    name: str
    keys: Mapping[str, str]
    agent_id: str
    verifier_id: str
    checker: str  # name@version
    target: str  # the project directory remote results are written under
    created_at: float
    revoked_at: float | None = None
    origins: tuple[str, ...] = ()

    @property
    def live(self) -> bool:
        return self.revoked_at is None


@dataclass(frozen=True)
class RemoteDelegation:
    """One local task handed to a remote agent, and where its wait stands."""

    id: str
    project_id: str
    task_id: str
    org_id: str
    agent_url: str  # the remote agent's interface URL (from its verified card)
    card_digest: str  # sha256 of the verified card's signed payload
    pinned: Mapping[str, str]  # the keys pinned at delegation (kid → public key)
    attempt_id: str
    fence: int
    state: RemoteState
    remote_task_id: str | None
    remote_state: str | None
    since: float | None  # when the wait for artifact quiescence began (ledger clock)
    reason: str | None
    evidence: Mapping[str, Any] = field(default_factory=dict)
    completion_id: str | None = None
    created_by: str = ""
    created_at: float = 0.0
    updated_at: float = 0.0


@dataclass(frozen=True)
class RemoteFile:
    """A verified artifact: its manifest entry's id and name, and the bytes that matched."""

    artifact_id: str
    name: str
    data: bytes


@dataclass(frozen=True)
class RemoteResult:
    """What the requester hands the ledger once the check ended: the remote state, the signed
    manifest as received (kept as evidence), the verified files, and what is still missing."""

    remote_state: TaskState
    manifest: bytes  # the signed manifest envelope, b"" when there is none
    files: tuple[RemoteFile, ...]
    missing: tuple[str, ...] = ()
    kid: str | None = None  # the pinned key that signed the manifest


_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def local_name(name: str, taken: set[str]) -> str:
    """A file name for a remote artifact: never the remote's path (only safe characters,
    no directories, no leading dot), unique among `taken` (which it extends)."""
    base = "".join(c if c in _SAFE else "_" for c in name.rsplit("/", 1)[-1])[:100].lstrip(".") or "artifact"
    out, n = base, 1
    while out in taken:
        n += 1
        out = f"{n}-{base}"[:110]
    taken.add(out)
    return out


_DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_ORIGINS = 16


def origin_of(url: str) -> str | None:
    """`scheme://host:port` (lower case, the port explicit) of an http(s) URL without
    credentials, else None."""
    try:
        u = urlsplit(url)
        port = u.port or _DEFAULT_PORTS.get(u.scheme)
    except ValueError:
        return None
    if u.scheme not in _DEFAULT_PORTS or not u.hostname or "@" in u.netloc or port is None:
        return None
    host = u.hostname.lower()
    return f"{u.scheme}://{f'[{host}]' if ':' in host else host}:{port}"


def explicit_origin(origin: str) -> bool:
    """An origin that names its address (an IP literal, or `localhost`): only such an origin
    may reach a loopback, link-local or private address."""
    host = urlsplit(origin).hostname or ""
    if host == "localhost":
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def parse_origins(values: Iterable[str]) -> tuple[str, ...]:
    """An organisation's origins, normalized: each `scheme://host[:port]` and nothing else
    (no path, query or credentials). Raises ValueError naming the first that is not."""
    out: list[str] = []
    for value in values:
        origin = origin_of(value) if isinstance(value, str) and len(value) <= 300 else None
        bare = isinstance(value, str) and urlsplit(value).path in ("", "/") and "?" not in value
        if origin is None or not bare or "#" in value:
            raise ValueError(f"not an origin (scheme://host[:port]): {str(value)[:100]!r}")
        if origin not in out:
            out.append(origin)
    if len(out) > MAX_ORIGINS:
        raise ValueError(f"at most {MAX_ORIGINS} origins")
    return tuple(out)
