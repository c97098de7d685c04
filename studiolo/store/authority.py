"""What authority survives a restore (docs/operations.md, "Backup and restore").

A backup is a past state: a token, grant, verifier key or admission in it may have been
revoked or replaced since it was taken. The ledger a restore replaces is the record of those
changes, so the restore reads it first (`known`, before a row is deleted) and, once the
backup is loaded, `settle` leaves no more authority than both allow:

- revoked there → revoked here (tokens, grants, remote organisations), whatever the backup says;
- a verifier's key replaced there → the replacing key here (receipts pinned to the old key no
  longer stand); an admission withdrawn there → withdrawn here; the service signing key →
  the replaced ledger's current one when it knew the backup's, else a new one;
- what the replaced ledger cannot vouch for (it is gone or empty, it is another ledger, or it
  never saw the object) is **held**: a held token authenticates nobody and a held admission
  admits no verifier until an admin reconfirms the principal (`ReconfirmOps`, audited as
  `principal.reconfirmed`). Grants act only through a token, so a live grant the replaced
  ledger does not know holds every token of its principal rather than the grant itself;
  reconfirming the principal vouches for its grants as they stand.

Several replaced ledgers may be named (the target, and another one given to `restore`, e.g.
the SQLite file a move to PostgreSQL leaves behind): a revocation or hold in any of them
wins, and a key they disagree on is vouched for by none.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, inspect

from studiolo.keys import ServiceKey
from studiolo.store._json import dumps, loads
from studiolo.store._raw import Raw
from studiolo.store.access import AccessRepo

__all__ = ["EMPTY", "HeldPrincipal", "Known", "Settled", "held_principals", "known", "settle"]

_CheckerKey = tuple[str, str]  # (project id, name@version)


@dataclass(frozen=True)
class Known:
    """What one replaced ledger says about authority (`EMPTY`: it vouches for nothing)."""

    tokens: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)  # (revoked, held)
    grants: dict[str, float | None] = field(default_factory=dict)  # revoked_at
    keys: dict[str, str | None] = field(default_factory=dict)  # principal id → public key
    checkers: dict[_CheckerKey, tuple[frozenset[str], frozenset[str]]] = field(
        default_factory=dict
    )  # (admitted, held) verifier ids
    orgs: dict[str, float | None] = field(default_factory=dict)  # remote org id → revoked_at
    service_key: str | None = None
    retired: tuple[dict[str, Any], ...] = ()  # meta.service_keys_retired

    def service_publics(self) -> set[str]:
        current = {ServiceKey.from_text(self.service_key).public} if self.service_key else set()
        return current | {str(r["x"]) for r in self.retired}


EMPTY = Known()

_META = "SELECT key, value FROM meta"
_CHECKERS = "SELECT project_id, name, version, verifiers FROM checkers"
_SET_VERIFIERS = (
    "UPDATE checkers SET verifiers = :verifiers WHERE project_id = :p AND name = :n AND version = :v"
)
_HELD_ADMISSIONS = "SELECT project_id, checker, verifier_id FROM held_admissions"
_HOLD = (
    "INSERT INTO held_admissions (project_id, checker, verifier_id, held_at)"
    " VALUES (:p, :checker, :verifier, :at)"
)
_UNHOLD = (
    "DELETE FROM held_admissions WHERE project_id = :p AND checker = :checker AND verifier_id = :verifier"
)


@dataclass(frozen=True)
class HeldPrincipal:
    """A principal whose authority waits for a reconfirmation, and what of it."""

    principal_id: str
    project_id: str | None
    name: str
    kind: str
    tokens: int
    admissions: tuple[str, ...]  # checker refs
    grants: tuple[str, ...]  # its live grants, which a reconfirmation vouches for


@dataclass(frozen=True)
class Settled:
    carried: dict[str, int]  # revocations and replacements taken from the replaced ledger(s)
    held: tuple[HeldPrincipal, ...]
    service_key: str  # "kept", "carried" or "rotated"


# reading the replaced ledger --------------------------------------------------------
def known(conn: Connection) -> Known:
    """Read what a ledger (at any schema revision, or none) says about authority."""
    names = set(inspect(conn).get_table_names())
    if not {"meta", "tokens", "grants", "principals", "checkers"} <= names:
        return EMPTY
    token_columns = {c["name"] for c in inspect(conn).get_columns("tokens")}
    held_at = "held_at" if "held_at" in token_columns else "NULL"  # a ledger from before holds
    raw = Raw(conn)
    tokens = {r[0]: (r[1], r[2]) for r in raw.all(f"SELECT id, revoked_at, {held_at} FROM tokens", {})}
    grants = {r[0]: r[1] for r in raw.all("SELECT id, revoked_at FROM grants", {})}
    keys = {r[0]: r[1] for r in raw.all("SELECT id, public_key FROM principals", {})}
    orgs = {}
    if "a2a_remote_orgs" in names:
        orgs = {r[0]: r[1] for r in raw.all("SELECT id, revoked_at FROM a2a_remote_orgs", {})}
    meta = {str(k): str(v) for k, v in raw.all(_META, {})}
    retired = tuple(json.loads(meta["service_keys_retired"])) if "service_keys_retired" in meta else ()
    return Known(tokens, grants, keys, _checkers(raw, names), orgs, meta.get("service_key"), retired)


def _checkers(raw: Raw, names: set[str]) -> dict[_CheckerKey, tuple[frozenset[str], frozenset[str]]]:
    admitted = {(r[0], f"{r[1]}@{r[2]}"): r[3] for r in raw.all(_CHECKERS, {})}
    held: dict[_CheckerKey, set[str]] = {}
    if "held_admissions" in names:
        for project_id, ref, verifier in raw.all(_HELD_ADMISSIONS, {}):
            held.setdefault((project_id, ref), set()).add(verifier)
    return {
        key: (frozenset(loads(verifiers)), frozenset(held.get(key, ())))
        for key, verifiers in admitted.items()
    }


# settling the restored ledger ---------------------------------------------------------
def settle(conn: Connection, sources: Sequence[Known], at: float) -> Settled:
    """Apply the replaced ledgers' revocations to the restored rows and hold the rest."""
    carried: Counter[str] = Counter()
    raw = Raw(conn)
    unvouched_grants = _settle_grants(raw, sources, carried)
    _settle_tokens(raw, sources, unvouched_grants, at, carried)
    unvouched_keys = _settle_keys(raw, sources, carried)
    _settle_admissions(raw, sources, unvouched_keys, at, carried)
    _settle_orgs(raw, sources, carried)
    service = _settle_service_key(raw, sources, at)
    return Settled(dict(sorted(carried.items())), held_principals(AccessRepo(conn)), service)


def _settle_grants(raw: Raw, sources: Sequence[Known], carried: Counter[str]) -> set[str]:
    """Carry revocations over; return the principals holding a live grant nobody vouches for."""
    revoke: list[dict[str, Any]] = []
    unvouched: set[str] = set()
    for gid, principal_id in raw.all("SELECT id, principal_id FROM grants WHERE revoked_at IS NULL", {}):
        facts = [k.grants[gid] for k in sources if gid in k.grants]
        revoked = [f for f in facts if f is not None]
        if revoked:
            revoke.append({"b_id": gid, "b_at": min(revoked)})
        elif not facts:
            unvouched.add(principal_id)
    _revoke(raw, "grants", revoke)
    carried["grants_revoked"] += len(revoke)
    return unvouched


def _settle_tokens(
    raw: Raw, sources: Sequence[Known], suspects: set[str], at: float, carried: Counter[str]
) -> None:
    revoke: list[dict[str, Any]] = []
    hold: list[str] = []
    live = "SELECT id, principal_id FROM tokens WHERE revoked_at IS NULL AND held_at IS NULL"
    for tid, principal_id in raw.all(live, {}):
        facts = [k.tokens[tid] for k in sources if tid in k.tokens]
        revoked = [f[0] for f in facts if f[0] is not None]
        if revoked:
            revoke.append({"b_id": tid, "b_at": min(revoked)})
        elif not facts or any(f[1] is not None for f in facts) or principal_id in suspects:
            hold.append(tid)
    _revoke(raw, "tokens", revoke)
    for tid in hold:
        raw.run("UPDATE tokens SET held_at = :at WHERE id = :id", {"id": tid, "at": at})
    carried["tokens_revoked"] += len(revoke)


def _revoke(raw: Raw, table: str, rows: list[dict[str, Any]]) -> None:
    for row in rows:
        raw.run(f"UPDATE {table} SET revoked_at = :b_at WHERE id = :b_id", row)


def _settle_keys(raw: Raw, sources: Sequence[Known], carried: Counter[str]) -> set[str]:
    """Take each principal's key from the replaced ledger; return those no ledger vouches for."""
    unvouched: set[str] = set()
    for pid, key in raw.all("SELECT id, public_key FROM principals", {}):
        there = {k.keys[pid] for k in sources if pid in k.keys}
        if len(there) != 1:  # unknown, or the replaced ledgers disagree
            unvouched.add(pid)
            continue
        (current,) = there
        if current != key:
            raw.run("UPDATE principals SET public_key = :key WHERE id = :id", {"id": pid, "key": current})
            carried["keys_replaced"] += 1
    return unvouched


def _settle_admissions(
    raw: Raw, sources: Sequence[Known], unvouched: set[str], at: float, carried: Counter[str]
) -> None:
    for project_id, name, version, verifiers in raw.all(_CHECKERS, {}):
        key = (project_id, f"{name}@{version}")
        admitted = set(loads(verifiers))
        withdrawn = {v for v in admitted if _withdrawn(sources, key, v)}
        held = {v for v in admitted - withdrawn if _unvouched(sources, key, v) or v in unvouched}
        if withdrawn or held:
            kept = dumps(sorted(admitted - withdrawn - held))
            checker = {"p": project_id, "n": name, "v": version}
            raw.run(_SET_VERIFIERS, checker | {"verifiers": kept})
        for v in sorted(held):
            raw.run(_HOLD, {"p": project_id, "checker": key[1], "verifier": v, "at": at})
        carried["admissions_withdrawn"] += len(withdrawn)
    _drop_withdrawn_holds(raw, sources, carried)


def _drop_withdrawn_holds(raw: Raw, sources: Sequence[Known], carried: Counter[str]) -> None:
    """A hold the backup has, on an admission a replaced ledger has withdrawn since: gone."""
    for project_id, ref, verifier in raw.all(_HELD_ADMISSIONS, {}):
        if _withdrawn(sources, (project_id, ref), verifier):  # held in the backup, withdrawn since
            raw.run(_UNHOLD, {"p": project_id, "checker": ref, "verifier": verifier})
            carried["admissions_withdrawn"] += 1


def _withdrawn(sources: Iterable[Known], key: _CheckerKey, verifier: str) -> bool:
    """Some replaced ledger knows the checker and neither admits nor holds the verifier."""
    return any(key in k.checkers and verifier not in k.checkers[key][0] | k.checkers[key][1] for k in sources)


def _unvouched(sources: Sequence[Known], key: _CheckerKey, verifier: str) -> bool:
    """No replaced ledger knows the checker, or one holds the admission."""
    knowing = [k.checkers[key] for k in sources if key in k.checkers]
    return not knowing or any(verifier in held for _, held in knowing)


def _settle_orgs(raw: Raw, sources: Sequence[Known], carried: Counter[str]) -> None:
    revoke: list[dict[str, Any]] = []
    for (oid,) in raw.all("SELECT id FROM a2a_remote_orgs WHERE revoked_at IS NULL", {}):
        revoked = [at for k in sources if (at := k.orgs.get(oid)) is not None]
        if revoked:
            revoke.append({"b_id": oid, "b_at": min(revoked)})
    _revoke(raw, "a2a_remote_orgs", revoke)
    carried["remote_orgs_revoked"] += len(revoke)


def _settle_service_key(raw: Raw, sources: Sequence[Known], at: float) -> str:
    """The replaced ledger's signing key if it knew the backup's (it may have rotated since);
    else a new key, the backup's retired (still published, so its receipts verify)."""
    restored = {str(k): str(v) for k, v in raw.all(_META, {})}
    text = restored.get("service_key")
    if text is None:
        return "kept"
    mine = ServiceKey.from_text(text)
    retired = list(json.loads(restored.get("service_keys_retired", "[]")))
    for source in sources:
        if source.service_key is not None and mine.public in source.service_publics():
            current = ServiceKey.from_text(source.service_key)
            merged = _union_retired([*retired, *source.retired], current.public)
            _set_meta(raw, "service_keys_retired", json.dumps(merged, sort_keys=True))
            if current.public == mine.public:
                return "kept"
            _set_meta(raw, "service_key", source.service_key)
            return "carried"
    new = ServiceKey.generate()
    retired.append({"x": mine.public, "kid": mine.kid, "retired_at": at})
    _set_meta(raw, "service_keys_retired", json.dumps(retired, sort_keys=True))
    _set_meta(raw, "service_key", new.to_text())
    return "rotated"


def _union_retired(entries: Iterable[dict[str, Any]], current: str) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if entry["x"] != current:
            seen.setdefault(str(entry["x"]), entry)
    return sorted(seen.values(), key=lambda e: (float(e.get("retired_at", 0)), str(e["x"])))


def _set_meta(raw: Raw, key: str, value: str) -> None:
    params = {"key": key, "value": value}
    if raw.run("UPDATE meta SET value = :value WHERE key = :key", params) == 0:
        raw.run("INSERT INTO meta (key, value) VALUES (:key, :value)", params)


# the report ----------------------------------------------------------------------------
def held_principals(access: AccessRepo) -> tuple[HeldPrincipal, ...]:
    """Every principal whose tokens or admissions are held, with what and its live grants."""
    out = []
    for pid in access.held_principals():
        principal = access.principal(pid)
        if principal is None:
            continue
        held = access.held_of(pid)
        grants = access.grants_of(pid, principal.project_id) if principal.project_id else []
        out.append(
            HeldPrincipal(
                pid,
                principal.project_id,
                principal.name,
                principal.kind.value,
                len(held.tokens),
                held.admissions,
                tuple(g.id for g in grants),
            )
        )
    return tuple(out)
