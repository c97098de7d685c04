"""Presentation helpers: a candidate's files diffed against their base revisions (bytes read
through the door with the viewer's authority), and the receipt's signed body as JSON."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

from studiolo._exceptions import StudioloError
from studiolo.core.model import Candidate, Completion, Principal
from studiolo.service import Coordinator

__all__ = ["FileDiff", "candidate_diffs", "receipt_json"]

_MAX_DIFF_LINES = 2000


@dataclass(frozen=True)
class FileDiff:
    path: str
    base: int
    lines: tuple[tuple[str, str], ...]  # (kind: add/del/hunk/ctx, text), escaped by the template
    note: str = ""  # why there is no diff (binary, unreadable, truncated)


def candidate_diffs(door: Coordinator, caller: Principal, project_id: str, cand: Candidate) -> list[FileDiff]:
    return [_diff(door, caller, project_id, cand, path) for path in sorted(cand.files)]


def _diff(door: Coordinator, caller: Principal, project_id: str, cand: Candidate, path: str) -> FileDiff:
    base = cand.bases.get(path, 0)
    try:
        digest = cand.files[path]
        new = door.get_blob(caller, digest) if digest else b""
        old = b""
        if base > 0:
            old = door.read_artifact(caller, project_id, path, base).data or b""
    except StudioloError as exc:
        return FileDiff(path, base, (), f"not shown: {exc.detail}")
    try:
        old_text, new_text = old.decode("utf-8"), new.decode("utf-8")
    except UnicodeDecodeError:
        return FileDiff(path, base, (), f"binary: {len(old)} → {len(new)} bytes")
    lines = list(
        difflib.unified_diff(
            old_text.splitlines(),
            new_text.splitlines(),
            f"{path}@{base}",
            f"{path} (candidate)",
            lineterm="",
        )
    )
    note = "truncated" if len(lines) > _MAX_DIFF_LINES else ""
    return FileDiff(path, base, tuple(_kind(line) for line in lines[:_MAX_DIFF_LINES]), note)


def _kind(line: str) -> tuple[str, str]:
    if line.startswith(("+++", "---")):
        return ("head", line)
    if line.startswith("@@"):
        return ("hunk", line)
    if line.startswith("+"):
        return ("add", line)
    if line.startswith("-"):
        return ("del", line)
    return ("ctx", line)


def receipt_json(completion: Completion) -> str:
    """The completion receipt and its signature, for the page's in-browser verification."""
    data: dict[str, Any] = {"receipt": dict(completion.receipt), "signature": completion.signature}
    return json.dumps(data, sort_keys=True)
