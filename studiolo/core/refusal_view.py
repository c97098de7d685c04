"""A refusal's details as JSON: whole for the audit event, or as one caller may see them.

A caller sees a path only inside its read scope: a path outside it is named as "a declared
dependency you may not read" (or "a target", "a path"), with no revision and no change, so
the refusal reveals nothing the caller could not discover (report §7.2). Principals are
named only when they belong to the project (`Reader.names`). Values in, JSON out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from studiolo.core.paths import matches_any
from studiolo.core.reasons import Reason
from studiolo.core.refusal import Change, Detail, Item, Moved
from studiolo.core.refusal_text import sentence

__all__ = ["HIDDEN", "Reader", "for_audit", "for_reader", "named_paths"]

# How a path the reader may not read is named, per reason.
HIDDEN: dict[Reason, str] = {
    Reason.DEPENDENCY_STALE: "a declared dependency you may not read",
    Reason.TARGET_BASE_STALE: "a target you may not read",
}
_HIDDEN_PATH = "a path you may not read"
_PRINCIPALS = ("owner", "caller", "holder", "issuer", "by")


@dataclass(frozen=True)
class Reader:
    """What one caller may read: path patterns of its live read grants (None: every path)
    and the names of the principals it may discover (the project's)."""

    scope: tuple[str, ...] | None
    names: Mapping[str, str] = field(default_factory=dict)

    def path(self, path: str) -> bool:
        return self.scope is None or matches_any(self.scope, path)

    def tree(self, prefix: str) -> bool:
        """Whether every path under `prefix` (a collection) is readable."""
        return self.scope is None or any(_covers_tree(p, prefix) for p in self.scope)


def _covers_tree(pattern: str, prefix: str) -> bool:
    if pattern == "**":
        return True
    if not pattern.endswith("/**"):
        return False
    base = pattern[:-2]  # "src/" of "src/**"
    return not any(ch in base for ch in "*?[") and prefix.startswith(base)


def for_audit(details: Iterable[Detail], names: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The whole details, for the audit event (and for a reader who may read everything)."""
    return for_reader(details, Reader(None, names or {}))


def for_reader(details: Iterable[Detail], reader: Reader) -> list[dict[str, Any]]:
    """The details as `reader` may see them, each with its person-readable `text`."""
    out = []
    for d in details:
        body = _detail(d, reader)
        body["text"] = sentence(body)
        out.append(body)
    return out


def named_paths(details: Iterable[Detail]) -> list[str]:
    """Every path and collection prefix the whole details name (an event feed withholds the
    audit event from a reader who may not read one of them)."""
    paths = {m.path for d in details for m in d.moved} | {i.path for d in details for i in d.items if i.path}
    return sorted(paths)


def _detail(d: Detail, reader: Reader) -> dict[str, Any]:
    hidden = HIDDEN.get(d.reason, _HIDDEN_PATH)
    return {
        "reason": d.reason.value,
        "facts": _named(d.facts, reader),
        "items": [_item(i, reader, hidden) for i in d.items],
        "moved": [_moved(m, reader, hidden) for m in d.moved],
        "change": _change(d.change, reader),
    }


def _named(fields: Mapping[str, object], reader: Reader) -> dict[str, Any]:
    """The fields, with `<key>_name` beside every principal id the reader may discover."""
    out: dict[str, Any] = dict(fields)
    for key in _PRINCIPALS:
        who = fields.get(key)
        if isinstance(who, str):
            out[f"{key}_name"] = reader.names.get(who)
    return out


def _item(i: Item, reader: Reader, hidden: str) -> dict[str, Any]:
    body = {"kind": i.kind, **_named(i.fields, reader)}
    if i.path is not None and not reader.path(i.path):
        return body | {"path": None, "change": None, "hidden": True, "note": hidden}
    return body | {"path": i.path, "change": _change(i.change, reader), "hidden": False, "note": ""}


def _moved(m: Moved, reader: Reader, hidden: str) -> dict[str, Any]:
    readable = reader.tree(m.path) if m.collection else reader.path(m.path)
    if not readable:
        none = {"path": None, "declared": None, "current": None, "change": None}
        return none | {"collection": m.collection, "hidden": True, "note": hidden}
    return {
        "path": m.path,
        "collection": m.collection,
        "declared": m.declared,
        "current": m.current,
        "change": _change(m.change, reader),
        "hidden": False,
        "note": "",
    }


def _change(c: Change | None, reader: Reader) -> dict[str, Any] | None:
    if c is None:
        return None
    return {
        "at": c.at,
        "by": c.by,
        "by_name": reader.names.get(c.by) if c.by else None,
        "cause": c.cause,
        "seq": c.seq,
        "note": c.note,
    }
