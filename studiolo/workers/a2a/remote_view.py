"""Reading a remote A2A task as the quiescence check sees it (`studiolo.core.quiescence`):
its state, its signed artifact manifest (the extension `MANIFEST_EXTENSION`), the inline bytes
it carries, and the manifest signature checked against the keys pinned at delegation.

Everything the remote sends is hostile input: the manifest is parsed strictly, its entries'
names never become paths, its URLs are only fetched from the organisation's origins.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from a2a.types.a2a_pb2 import Artifact, Task
from a2a.types.a2a_pb2 import TaskState as WireState

from studiolo.core.canonical import canonical_json
from studiolo.core.quiescence import (
    ArtifactIntegrityError,
    Channel,
    RemoteTaskView,
    SignedArtifact,
    TaskState,
)
from studiolo.core.remote import MANIFEST_EXTENSION, MANIFEST_ID
from studiolo.jws import verify_detached

__all__ = ["RemoteRead", "manifest_kid", "read_task"]

MANIFEST_TYPE = "studiolo.a2a.artifact-manifest/v1"
_CHANNELS = {"inline": Channel.INLINE, "url": Channel.URL, "detached": Channel.DETACHED}
_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True)
class RemoteRead:
    """One GetTask: the view for the check, and the inline bytes by artifact id."""

    view: RemoteTaskView
    inline: Mapping[str, bytes]


def read_task(task: Task) -> RemoteRead:
    """The quiescence view of a remote task (raises ArtifactIntegrityError for a manifest that
    cannot be what a pinned key signed: unparseable, or entries of the wrong shape)."""
    state = TaskState.from_wire(WireState.Name(task.status.state))
    inline = {a.artifact_id: data for a in task.artifacts if (data := _inline_bytes(a)) is not None}
    manifests = [a for a in task.artifacts if _is_manifest(a)]
    if not manifests:
        unsigned = tuple(sorted(a.artifact_id for a in task.artifacts))
        return RemoteRead(RemoteTaskView(task.id, state, unsigned=unsigned), inline)
    if len(manifests) > 1:
        raise ArtifactIntegrityError("invalid_manifest", "two manifests on one task")
    text = _text(manifests[0])
    manifest = _manifest(text)
    entries = tuple(_entry(e) for e in manifest["artifacts"])
    listed = {e.artifact_id for e in entries} | {manifests[0].artifact_id}
    unsigned = tuple(sorted(a.artifact_id for a in task.artifacts if a.artifact_id not in listed))
    view = RemoteTaskView(
        task.id,
        state,
        entries,
        hashlib.sha256(text).hexdigest(),
        manifest.get("a2a_task_id") if isinstance(manifest.get("a2a_task_id"), str) else None,
        text,
        unsigned,
    )
    return RemoteRead(view, inline)


def manifest_kid(view: RemoteTaskView, pinned: Mapping[str, str]) -> str | None:
    """The pinned key that signed this view's manifest, else None."""
    try:
        envelope = json.loads(view.signed_manifest)
        jws, manifest = envelope["jws"], envelope["manifest"]
        return verify_detached(str(jws["protected"]), str(jws["signature"]), canonical_json(manifest), pinned)
    except (ValueError, KeyError, TypeError):
        return None


def _is_manifest(a: Artifact) -> bool:
    return MANIFEST_EXTENSION in a.extensions or a.artifact_id == MANIFEST_ID


def _text(a: Artifact) -> bytes:
    texts = [p.text for p in a.parts if p.WhichOneof("content") == "text"]
    if len(texts) != 1:
        raise ArtifactIntegrityError("invalid_manifest", "a manifest is one text part")
    return str(texts[0]).encode("utf-8")


def _manifest(text: bytes) -> dict[str, Any]:
    try:
        envelope = json.loads(text)
    except ValueError as exc:
        raise ArtifactIntegrityError("invalid_manifest", "the manifest is not JSON") from exc
    manifest = envelope.get("manifest") if isinstance(envelope, dict) else None
    if not isinstance(manifest, dict) or manifest.get("type") != MANIFEST_TYPE:
        raise ArtifactIntegrityError("invalid_manifest", f"not a {MANIFEST_TYPE} envelope")
    if not isinstance(manifest.get("artifacts"), list) or not isinstance(envelope.get("jws"), dict):
        raise ArtifactIntegrityError("invalid_manifest", "a manifest lists artifacts and carries a jws")
    return manifest


def _entry(e: object) -> SignedArtifact:
    if not isinstance(e, dict):
        raise ArtifactIntegrityError("invalid_manifest", "a manifest entry is an object")
    aid, name, sha, size = e.get("artifact_id"), e.get("name"), e.get("sha256"), e.get("size")
    channel = _CHANNELS.get(str(e.get("delivery")))
    url = e.get("url")
    ok = (
        isinstance(aid, str)
        and 0 < len(aid) <= 300
        and isinstance(name, str)
        and len(name) <= 1000
        and isinstance(sha, str)
        and len(sha) == 64
        and set(sha) <= _HEX
        and isinstance(size, int)
        and not isinstance(size, bool)
        and channel is not None
        and (channel is Channel.INLINE or (isinstance(url, str) and len(url) <= 4000))
    )
    if not ok:
        raise ArtifactIntegrityError("invalid_manifest", f"malformed entry {str(e)[:200]}")
    assert isinstance(aid, str) and isinstance(name, str) and isinstance(sha, str) and isinstance(size, int)
    assert channel is not None
    return SignedArtifact(aid, name, sha, size, channel, None if channel is Channel.INLINE else str(url))


def _inline_bytes(a: Artifact) -> bytes | None:
    """The bytes of an inline artifact: its parts in order (raw bytes, or the UTF-8 of text
    parts), as a chunked artifact (`append`) accumulates them; None if a part is not inline."""
    out = bytearray()
    for p in a.parts:
        kind = p.WhichOneof("content")
        if kind == "raw":
            out += p.raw
        elif kind == "text":
            out += p.text.encode("utf-8")
        else:
            return None
    return bytes(out) if a.parts else None
