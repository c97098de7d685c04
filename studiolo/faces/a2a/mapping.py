"""A delegation as an A2A `Task`: the state mapping (docs/a2a.md, one table), the artifacts
of an accepted completion, and the signed artifact manifest."""

from __future__ import annotations

import hashlib
import mimetypes
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from a2a.types.a2a_pb2 import Artifact, Message, Part, Role, Task, TaskState, TaskStatus
from google.protobuf.json_format import ParseDict
from google.protobuf.timestamp_pb2 import Timestamp

from studiolo.core.canonical import canonical_json
from studiolo.core.facts import Fact
from studiolo.core.model import TaskStatus as Status
from studiolo.core.remote import MANIFEST_EXTENSION, MANIFEST_ID
from studiolo.jws import sign_detached
from studiolo.keys import ServiceKey
from studiolo.service import DelegatedView

__all__ = [
    "RECEIPT_ID",
    "STATE_TABLE",
    "Rendering",
    "a2a_state",
    "render",
    "status_time",
]

RECEIPT_ID = "completion-receipt"

# (ledger status, strongest fact or condition) → A2A state. docs/a2a.md shows this table and
# tests/faces/a2a/test_mapping.py checks every row of it against `a2a_state`.
STATE_TABLE: tuple[tuple[str, str, str], ...] = (
    ("(intake refused)", "—", "TASK_STATE_REJECTED"),
    ("open", "open", "TASK_STATE_SUBMITTED"),
    ("claimed", "claimed", "TASK_STATE_WORKING"),
    ("claimed", "candidate prepared", "TASK_STATE_WORKING"),
    ("claimed", "verified", "TASK_STATE_WORKING"),
    ("completed", "accepted completion", "TASK_STATE_COMPLETED"),
    ("completed", "no completion record", "TASK_STATE_FAILED"),
    ("cancelled", "cancelled", "TASK_STATE_CANCELED"),
)


def a2a_state(v: DelegatedView) -> tuple[TaskState, str]:
    """The A2A state of a delegation and the fact its status message states."""
    if v.view is None:
        return TaskState.TASK_STATE_REJECTED, f"intake refused: {v.delegation.refused}"
    status, fact = v.view.task.status, v.view.fact
    if status is Status.CANCELLED:
        return TaskState.TASK_STATE_CANCELED, Fact.CANCELLED.value
    if status is Status.COMPLETED:
        if v.view.completion is None:
            return TaskState.TASK_STATE_FAILED, "completed without a completion record"
        return TaskState.TASK_STATE_COMPLETED, fact.value
    if status is Status.CLAIMED:
        return TaskState.TASK_STATE_WORKING, fact.value
    return TaskState.TASK_STATE_SUBMITTED, fact.value


@dataclass(frozen=True)
class Rendering:
    task: Task  # status, history; artifacts only once COMPLETED
    artifacts: tuple[Artifact, ...]  # in emission order: files, receipt, manifest (last)
    state: TaskState
    text: str


def render(v: DelegatedView, key: ServiceKey, base_url: str, inline_max: int) -> Rendering:
    """The A2A `Task` for a delegation: a pure function of one ledger read."""
    d = v.delegation
    state, text = a2a_state(v)
    status = TaskStatus(state=state, message=_status_message(v, text), timestamp=status_time(v))
    history = [ParseDict(dict(d.message), Message(), ignore_unknown_fields=True)]
    artifacts: tuple[Artifact, ...] = ()
    if state == TaskState.TASK_STATE_COMPLETED:
        artifacts = _artifacts(v, key, base_url, inline_max)
    task = Task(id=d.id, context_id=d.context_id, status=status, history=history, artifacts=artifacts)
    return Rendering(task, artifacts, state, text)


def status_time(v: DelegatedView) -> Timestamp:
    """`TaskStatus.timestamp`: when the ledger last changed what the status says (microseconds)."""
    stamp = Timestamp()
    stamp.FromMicroseconds(round(v.updated_at * 1_000_000))
    return stamp


def _status_message(v: DelegatedView, text: str) -> Message:
    d = v.delegation
    meta: dict[str, Any] = {"studioloFact": text}  # A2A JSON is camelCase (TCK DM-SERIAL-001)
    if v.view is not None:
        meta |= {"studioloTaskId": v.view.task.id, "contractHash": v.view.task.contract_hash}
    msg = Message(message_id=f"{d.id}:status", role=Role.ROLE_AGENT, task_id=d.id, context_id=d.context_id)
    msg.parts.append(Part(text=text))
    msg.metadata.update(meta)
    return msg


def _artifacts(v: DelegatedView, key: ServiceKey, base_url: str, inline_max: int) -> tuple[Artifact, ...]:
    assert v.view is not None and v.view.completion is not None
    entries: list[dict[str, Any]] = []
    out: list[Artifact] = []
    for f in v.files:
        art_id = f"file:{f.path}"
        name = f.path.rsplit("/", 1)[-1]
        media = mimetypes.guess_type(name)[0] or "application/octet-stream"
        entry: dict[str, Any] = {"artifact_id": art_id, "name": f.path}
        entry |= {"sha256": f.digest.removeprefix("sha256:")}
        entry |= {"size": len(f.data), "revision": f.revision}
        if len(f.data) <= inline_max:
            part = Part(raw=f.data, filename=name, media_type=media)
            entry["delivery"] = "inline"
        else:
            url = f"{base_url}/a2a/tasks/{quote(v.delegation.id, safe='')}/files/{quote(f.path)}"
            part = Part(url=url, filename=name, media_type=media)
            entry |= {"delivery": "url", "url": url}
        out.append(Artifact(artifact_id=art_id, name=f.path, parts=[part]))
        entries.append(entry)
    c = v.view.completion
    receipt = canonical_json({"receipt": dict(c.receipt), "signature": c.signature, "kid": key.kid})
    out.append(_text_artifact(RECEIPT_ID, "signed completion receipt", receipt))
    entries.append(_entry(RECEIPT_ID, receipt))
    manifest = {
        "type": "studiolo.a2a.artifact-manifest/v1",
        "a2a_task_id": v.delegation.id,
        "context_id": v.delegation.context_id,
        "task_id": v.view.task.id,
        "contract_hash": v.view.task.contract_hash,
        "completion_id": c.id,
        "commit_version": c.commit_version,
        "artifacts": entries,
    }
    signature = _sign(key, manifest)
    envelope = canonical_json({"manifest": manifest, "jws": signature})
    manifest_art = _text_artifact(MANIFEST_ID, "signed artifact manifest", envelope)
    manifest_art.extensions.append(MANIFEST_EXTENSION)
    out.append(manifest_art)
    return tuple(out)


def _sign(key: ServiceKey, manifest: dict[str, Any]) -> dict[str, str]:
    return sign_detached(key, canonical_json(manifest))


def _text_artifact(art_id: str, name: str, body: bytes) -> Artifact:
    part = Part(text=body.decode("utf-8"), media_type="application/json", filename=f"{art_id}.json")
    return Artifact(artifact_id=art_id, name=name, parts=[part])


def _entry(art_id: str, body: bytes) -> dict[str, Any]:
    digest = hashlib.sha256(body).hexdigest()
    return {"artifact_id": art_id, "name": art_id, "sha256": digest, "size": len(body), "delivery": "inline"}
