"""One sentence for a person per refusal detail, from its JSON form (`core.refusal_view`):
"src/input.txt changed from revision 1 to 2 by editor at 2026-12-04 14:47 UTC". The one
place such words are made: the API sends them as each detail's `text`, the CLI prints them,
the dashboard can show them. Pure: times are formatted in UTC, nothing reads a clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["sentence", "when"]

_Body = Mapping[str, Any]


def sentence(d: _Body) -> str:
    """A sentence about one detail (its `reason` if nothing more can be said)."""
    say = _SAY.get(str(d.get("reason")))
    return (say(d) if say else "") or str(d.get("reason"))


def when(at: object) -> str:
    """A time in seconds since the epoch, in UTC, to the second."""
    if not isinstance(at, int | float) or isinstance(at, bool) or not 0 <= at < 253402300800:
        return "an unknown time"
    days, secs = divmod(int(at), 86400)
    year, month, day = _civil(days)
    return f"{year:04d}-{month:02d}-{day:02d} {secs // 3600:02d}:{secs % 3600 // 60:02d}:{secs % 60:02d} UTC"


def _civil(days: int) -> tuple[int, int, int]:
    """The proleptic Gregorian date `days` after 1970-01-01 (H. Hinnant's `civil_from_days`);
    core reads no clock and imports no `datetime`."""
    z = days + 719468
    era, doe = divmod(z, 146097)
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def _who(name: object, ident: object) -> str:
    if isinstance(name, str) and name:
        return name
    return str(ident) if ident else "the service"


def _change(c: object, verb: str = "") -> str:
    if not isinstance(c, Mapping):
        return ""
    cause = str(c.get("cause", ""))
    how = f" (in completion {cause})" if cause.startswith("cmp_") else ""
    note = f" ({c['note']})" if c.get("note") else ""
    return f"{verb} by {_who(c.get('by_name'), c.get('by'))} at {when(c.get('at'))}{how}{note}"


def _joined(parts: list[str], end: str = ".", *, capital: bool = True) -> str:
    """The parts as one sentence: joined by semicolons, its first letter upper case (unless
    it starts with a path, which keeps its spelling)."""
    text = "; ".join(parts)
    return (text[:1].upper() if capital else text[:1]) + text[1:] + end if text else ""


def _fact(d: _Body, key: str) -> Any:
    facts = d.get("facts")
    return facts.get(key) if isinstance(facts, Mapping) else None


def _items(d: _Body) -> list[Mapping[str, Any]]:
    return [i for i in d.get("items") or [] if isinstance(i, Mapping)]


def _inactive(d: _Body) -> str:
    return f"The task was {_fact(d, 'status')}" + _change(d.get("change")) + "."


def _not_owner(d: _Body) -> str:
    owner = _fact(d, "owner")
    if owner is None:
        return f"Attempt {_fact(d, 'attempt_id')} is not an attempt of this task."
    return f"Attempt {_fact(d, 'attempt_id')} belongs to {_who(_fact(d, 'owner_name'), owner)}, not to you."


def _superseded(d: _Body) -> str:
    status, holder = _fact(d, "attempt_status"), _fact(d, "holder")
    if status is None:
        head = f"Attempt {_fact(d, 'attempt_id')} is not an attempt of this task"
    elif status == "active" and _fact(d, "attempt_fence") != _fact(d, "fence"):
        head = f"Fence {_fact(d, 'fence')} is not the attempt's fence {_fact(d, 'attempt_fence')}"
    else:
        head = f"Your attempt was {status}" + _change(d.get("change"))
    now = (
        f"; {_who(_fact(d, 'holder_name'), holder)} holds the task now"
        if holder
        else "; nobody holds the task now"
    )
    return head + now + "."


def _lease(d: _Body) -> str:
    if _fact(d, "restored"):
        return "Your lease was issued before the ledger was restored from a backup; it is void."
    deadline, commit = when(_fact(d, "lease_deadline")), when(_fact(d, "committed_at"))
    return f"Your lease ended at {deadline}; the commit came at {commit}."


def _unbound(d: _Body) -> str:
    if not _fact(d, "found"):
        return f"Candidate {_fact(d, 'candidate_id')} does not exist in this project."
    return (
        f"Candidate {_fact(d, 'candidate_id')} was submitted by attempt {_fact(d, 'candidate_attempt_id')} "
        f"of task {_fact(d, 'candidate_task_id')}, not by attempt {_fact(d, 'attempt_id')} of this task."
    )


def _paths(d: _Body) -> str:
    names = [str(i["path"]) if i.get("path") else str(i.get("note")) for i in _items(d)]
    return ", ".join(names) or "nothing"


def _scope(d: _Body) -> str:
    scope = ", ".join(str(p) for p in _fact(d, "scope") or [])
    return f"Outside the contract's scope ({scope}): {_paths(d)}."


def _path_conflict(d: _Body) -> str:
    pairs = _paths(d)
    return f"Publishing would make a path both a file and a directory (a file, then one under it): {pairs}."


def _unauthorized(d: _Body) -> str:
    missing = [
        f"{i.get('action')} on {i.get('path') or i.get('note')}"
        if i.get("path") or i.get("hidden")
        else str(i.get("action"))
        for i in _items(d)
        if i.get("kind") == "missing_grant"
    ]
    revoked = [
        f"Grant {i.get('grant_id')} was revoked" + _change(i.get("change"))
        for i in _items(d)
        if i.get("kind") == "revoked_grant"
    ]
    text = "You hold no live grant for " + "; ".join(missing) + "." if missing else "You are not authorized."
    return text + (" " + "; ".join(revoked) + "." if revoked else "")


def _contract(d: _Body) -> str:
    moved = _change(d.get("change"), "; the contract was migrated")
    return f"The task's contract is {_fact(d, 'pinned')}, not {_fact(d, 'requested')}{moved}."


def _stale(d: _Body) -> str:
    parts = []
    for m in d.get("moved") or []:
        if not m.get("path"):
            parts.append(f"{m.get('note')} changed")
            continue
        what = f"the collection {m['path']}" if m.get("collection") else str(m["path"])
        parts.append(
            f"{what} changed from revision {m.get('declared')} to {m.get('current')}"
            + _change(m.get("change"))
        )
    moved = d.get("moved") or []
    starts_with_path = bool(moved) and bool(moved[0].get("path"))
    return _joined(parts, ", since the candidate declared it.", capital=not starts_with_path)


def _untrusted(d: _Body) -> str:
    why = {
        "not_found": "does not exist",
        "signature_does_not_stand": "has a signature that no longer stands",
        "checker_not_in_contract": "is for a checker the contract does not name for its criterion",
        "issuer_not_admitted": "comes from a verifier not admitted for its checker",
    }
    return _joined(
        [
            f"receipt {i.get('receipt_id')} {why.get(str(i.get('problem')), i.get('problem'))}"
            for i in _items(d)
        ]
    )


def _not_bound(d: _Body) -> str:
    return _joined(
        [
            f"receipt {i.get('receipt_id')} binds another {', '.join(i.get('differs') or [])}"
            for i in _items(d)
        ]
    )


def _not_separate(d: _Body) -> str:
    return _joined(
        [
            f"receipt {i.get('receipt_id')} for criterion {i.get('criterion')} was computed where the "
            "candidate's code ran; the contract wants a verdict computed apart from it"
            for i in _items(d)
        ]
    )


def _missing(d: _Body) -> str:
    parts = []
    for i in _items(d):
        hint = f" (receipt {i['uncited_pass']} passes it: cite it)" if i.get("uncited_pass") else ""
        parts.append(
            f"criterion {i.get('criterion')} ({i.get('checker')}) has no cited passing receipt{hint}"
        )
    return _joined(parts)


def _failed(d: _Body) -> str:
    parts = [
        f"criterion {i.get('criterion')} failed: receipt {i.get('receipt_id')} from "
        f"{_who(i.get('issuer_name'), i.get('issuer'))} at {when((i.get('issued_at_ms') or 0) / 1000)}"
        + ("" if i.get("cited") else " (not cited, but it counts)")
        for i in _items(d)
    ]
    return _joined(parts)


_SAY: dict[str, Callable[[_Body], str]] = {
    "task_not_active": _inactive,
    "caller_not_attempt_owner": _not_owner,
    "attempt_superseded": _superseded,
    "lease_expired": _lease,
    "candidate_not_bound": _unbound,
    "scope_violation": _scope,
    "not_authorized": _unauthorized,
    "contract_mismatch": _contract,
    "dependency_stale": _stale,
    "target_base_stale": _stale,
    "path_conflict": _path_conflict,
    "evidence_untrusted": _untrusted,
    "evidence_not_bound": _not_bound,
    "evidence_not_separate": _not_separate,
    "evidence_missing": _missing,
    "evidence_failed": _failed,
}
