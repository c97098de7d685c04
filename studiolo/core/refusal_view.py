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

__all__ = ["HIDDEN", "Reader", "for_audit", "for_reader", "named_paths", "readable_paths", "redact"]

# How a path the reader may not read is named, per reason.
HIDDEN: dict[str, str] = {
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
    """The whole details, each with its person-readable `text`: the audit event's form."""
    return [_with_text(_detail(d, names or {})) for d in details]


def for_reader(details: Iterable[Detail], reader: Reader) -> list[dict[str, Any]]:
    """The details as `reader` may see them, each with its person-readable `text`."""
    return redact(for_audit(details, reader.names), reader)


def redact(bodies: Iterable[Mapping[str, Any]], reader: Reader) -> list[dict[str, Any]]:
    """Details in their JSON form (`for_audit`, as an audit event keeps them) as `reader` may
    see them: every path it may not read is hidden, with its revisions and its change."""
    out = []
    for body in bodies:
        note = HIDDEN.get(str(body.get("reason")), _HIDDEN_PATH)
        items = [
            _hidden_item(i, note) if _unreadable(i, reader) else dict(i) for i in body.get("items") or []
        ]
        moved = [
            _hidden_moved(m, note) if _unreadable(m, reader) else dict(m) for m in body.get("moved") or []
        ]
        out.append(_with_text({**body, "items": items, "moved": moved}))
    return out


def readable_paths(paths: Iterable[str], reader: Reader) -> list[str]:
    """Those of `paths` (paths and `prefix/` collections) the reader may read."""
    return [p for p in paths if (reader.tree(p) if p.endswith("/") else reader.path(p))]


def named_paths(details: Iterable[Detail]) -> list[str]:
    """Every path and collection prefix the whole details name (an event feed withholds the
    audit event from a reader who may not read one of them)."""
    paths = {m.path for d in details for m in d.moved} | {i.path for d in details for i in d.items if i.path}
    return sorted(paths)


def _with_text(body: dict[str, Any]) -> dict[str, Any]:
    body["text"] = sentence(body)
    return body


def _unreadable(entry: Mapping[str, Any], reader: Reader) -> bool:
    path = entry.get("path")
    if not isinstance(path, str):
        return False
    return not (reader.tree(path) if entry.get("collection") else reader.path(path))


def _hidden_item(i: Mapping[str, Any], note: str) -> dict[str, Any]:
    return {**i, "path": None, "change": None, "hidden": True, "note": note}


def _hidden_moved(m: Mapping[str, Any], note: str) -> dict[str, Any]:
    none = {"path": None, "declared": None, "current": None, "change": None}
    return {**m, **none, "hidden": True, "note": note}


def _detail(d: Detail, names: Mapping[str, str]) -> dict[str, Any]:
    return {
        "reason": d.reason.value,
        "facts": _named(d.facts, names),
        "items": [_item(i, names) for i in d.items],
        "moved": [_moved(m, names) for m in d.moved],
        "change": _change(d.change, names),
    }


def _named(fields: Mapping[str, object], names: Mapping[str, str]) -> dict[str, Any]:
    """The fields, with `<key>_name` beside every principal id that has a name here."""
    out: dict[str, Any] = dict(fields)
    for key in _PRINCIPALS:
        who = fields.get(key)
        if isinstance(who, str):
            out[f"{key}_name"] = names.get(who)
    return out


def _item(i: Item, names: Mapping[str, str]) -> dict[str, Any]:
    body = {"kind": i.kind, **_named(i.fields, names)}
    return body | {"path": i.path, "change": _change(i.change, names), "hidden": False, "note": ""}


def _moved(m: Moved, names: Mapping[str, str]) -> dict[str, Any]:
    return {
        "path": m.path,
        "collection": m.collection,
        "declared": m.declared,
        "current": m.current,
        "change": _change(m.change, names),
        "hidden": False,
        "note": "",
    }


def _change(c: Change | None, names: Mapping[str, str]) -> dict[str, Any] | None:
    if c is None:
        return None
    return {
        "at": c.at,
        "by": c.by,
        "by_name": names.get(c.by) if c.by else None,
        "cause": c.cause,
        "seq": c.seq,
        "note": c.note,
    }
