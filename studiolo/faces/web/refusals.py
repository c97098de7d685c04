"""A refused completion for a person: each failed predicate in plain words with its recovery
hint, and the refusal's structured details when the ledger recorded them.

A detail is a mapping with a `kind` (or the core's `reason`) and fields (what moved, from
which revision to which, by whom, when). It is shown generically (every field named in
words, principal ids as names, times as dates) under the core's sentence (`text`), or one
made here for a changed path; a refusal recorded without details shows the predicates
alone."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from studiolo.core.model import Event
from studiolo.faces.web.reasons import explain

__all__ = ["Detail", "Refusal", "refusal"]

_FROM = ("from_revision", "from", "old_revision", "revision", "base", "was")
_TO = ("to_revision", "to", "new_revision", "current_revision", "now", "current")
_BY = ("by", "actor", "editor", "principal", "principal_id", "by_principal")
_AT = ("at", "changed_at", "when", "event_at")


@dataclass(frozen=True)
class Detail:
    kind: str
    title: str  # the kind in words
    sentence: str  # a sentence for a person, or "" when the fields say it best
    fields: tuple[tuple[str, str], ...]  # (label, value) of every field but the kind


@dataclass(frozen=True)
class Refusal:
    event: Event
    reasons: tuple[tuple[str, str, str], ...]  # (code, what failed, how to recover)
    details: tuple[Detail, ...]


def refusal(event: Event, names: Mapping[str, str]) -> Refusal:
    reasons = tuple((str(code), *explain(str(code))) for code in event.data.get("failed", []))
    return Refusal(event, reasons, tuple(_detail(d, names) for d in _raw_details(event.data.get("details"))))


def _raw_details(found: Any) -> Iterable[Mapping[str, Any]]:
    """The details as recorded: a list of mappings, or a mapping of predicate → detail(s)."""
    if isinstance(found, Mapping):
        for key, value in found.items():
            items = value if isinstance(value, list) else [value]
            yield from (
                {"kind": key, **v} if isinstance(v, Mapping) else {"kind": key, "value": v} for v in items
            )
    elif isinstance(found, list):
        yield from (d if isinstance(d, Mapping) else {"kind": "detail", "value": d} for d in found)


_NOT_FIELDS = frozenset({"kind", "reason", "text"})


def _detail(raw: Mapping[str, Any], names: Mapping[str, str]) -> Detail:
    """A detail as the door recorded it: its `kind` (or `reason`), the sentence the core made
    (`text`) if any, and every other field that holds something."""
    kind = str(raw.get("kind") or raw.get("reason") or "detail")
    text = raw.get("text")
    said = text if isinstance(text, str) and text else _sentence(raw, names)
    fields = tuple(
        (_label(k), _value(k, v, names))
        for k, v in raw.items()
        if k not in _NOT_FIELDS and v not in (None, [], {})
    )
    return Detail(kind, _label(kind).capitalize(), said, fields)


def _sentence(raw: Mapping[str, Any], names: Mapping[str, str]) -> str:
    """ "src/input.txt changed from revision 1 to 2 by editor at 14:47" when the detail says so."""
    path, old, new = raw.get("path"), _first(raw, _FROM), _first(raw, _TO)
    if not isinstance(path, str) or old is None or new is None or old == new:
        return ""
    text = f"{path} changed from revision {old} to {new}"
    who = _first(raw, _BY)
    if who is not None:
        text += f" by {_value('by', who, names)}"
    at = _first(raw, _AT)
    if isinstance(at, int | float):
        text += f" at {_value('at', at, names)}"
    return text


def _first(raw: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    return next((raw[k] for k in keys if raw.get(k) is not None), None)


def _label(key: str) -> str:
    return key.replace("_", " ").strip()


def _value(key: str, value: Any, names: Mapping[str, str]) -> str:
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, bool) or value is None:
        return {True: "yes", False: "no", None: "—"}[value]
    if isinstance(value, int | float) and _is_time(key) and value > 1e8:
        seconds = value / 1000 if value > 1e11 else value  # milliseconds or seconds since the epoch
        return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    if isinstance(value, list):
        return "; ".join(_value(key, v, names) for v in value)
    if isinstance(value, Mapping):
        return ", ".join(
            f"{_label(str(k))} {_value(str(k), v, names)}" for k, v in value.items() if v not in (None, "")
        )
    return str(value)


def _is_time(key: str) -> bool:
    return key in _AT or key.endswith(("_at", "deadline", "_time"))
