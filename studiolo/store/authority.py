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

from sqlalchemy import Connection, bindparam, insert, inspect, null, select, update

from studiolo.keys import ServiceKey
from studiolo.store import schema as s
from studiolo.store._json import dumps, loads
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
    held_at = s.tokens.c.held_at if "held_at" in token_columns else null()
    tokens = {r[0]: (r[1], r[2]) for r in conn.execute(select(s.tokens.c.id, s.tokens.c.revoked_at, held_at))}
    grants = {r[0]: r[1] for r in conn.execute(select(s.grants.c.id, s.grants.c.revoked_at))}
    keys = {r[0]: r[1] for r in conn.execute(select(s.principals.c.id, s.principals.c.public_key))}
    orgs = {}
    if "a2a_remote_orgs" in names:
        t = s.a2a_remote_orgs
        orgs = {r[0]: r[1] for r in conn.execute(select(t.c.id, t.c.revoked_at))}
    meta = {str(k): str(v) for k, v in conn.execute(select(s.meta.c.key, s.meta.c.value))}
    retired = tuple(json.loads(meta["service_keys_retired"])) if "service_keys_retired" in meta else ()
    return Known(tokens, grants, keys, _checkers(conn, names), orgs, meta.get("service_key"), retired)


def _checkers(conn: Connection, names: set[str]) -> dict[_CheckerKey, tuple[frozenset[str], frozenset[str]]]:
    c = s.checkers.c
    admitted = {
        (r[0], f"{r[1]}@{r[2]}"): r[3]
        for r in conn.execute(select(c.project_id, c.name, c.version, c.verifiers))
    }
    held: dict[_CheckerKey, set[str]] = {}
    if "held_admissions" in names:
        h = s.held_admissions.c
        for project_id, ref, verifier in conn.execute(select(h.project_id, h.checker, h.verifier_id)):
            held.setdefault((project_id, ref), set()).add(verifier)
    return {
        key: (frozenset(loads(verifiers)), frozenset(held.get(key, ())))
        for key, verifiers in admitted.items()
    }


# settling the restored ledger ---------------------------------------------------------
def settle(conn: Connection, sources: Sequence[Known], at: float) -> Settled:
    """Apply the replaced ledgers' revocations to the restored rows and hold the rest."""
    carried: Counter[str] = Counter()
    unvouched_grants = _settle_grants(conn, sources, carried)
    _settle_tokens(conn, sources, unvouched_grants, at, carried)
    unvouched_keys = _settle_keys(conn, sources, carried)
    _settle_admissions(conn, sources, unvouched_keys, at, carried)
    _settle_orgs(conn, sources, carried)
    service = _settle_service_key(conn, sources, at)
    return Settled(dict(sorted(carried.items())), held_principals(AccessRepo(conn)), service)


def _settle_grants(conn: Connection, sources: Sequence[Known], carried: Counter[str]) -> set[str]:
    """Carry revocations over; return the principals holding a live grant nobody vouches for."""
    t = s.grants
    revoke: list[dict[str, Any]] = []
    unvouched: set[str] = set()
    for gid, principal_id in conn.execute(select(t.c.id, t.c.principal_id).where(t.c.revoked_at.is_(None))):
        facts = [k.grants[gid] for k in sources if gid in k.grants]
        revoked = [f for f in facts if f is not None]
        if revoked:
            revoke.append({"b_id": gid, "b_at": min(revoked)})
        elif not facts:
            unvouched.add(principal_id)
    _revoke(conn, t, revoke)
    carried["grants_revoked"] += len(revoke)
    return unvouched


def _settle_tokens(
    conn: Connection, sources: Sequence[Known], suspects: set[str], at: float, carried: Counter[str]
) -> None:
    t = s.tokens
    revoke: list[dict[str, Any]] = []
    hold: list[dict[str, Any]] = []
    live = select(t.c.id, t.c.principal_id).where(t.c.revoked_at.is_(None), t.c.held_at.is_(None))
    for tid, principal_id in conn.execute(live):
        facts = [k.tokens[tid] for k in sources if tid in k.tokens]
        revoked = [f[0] for f in facts if f[0] is not None]
        if revoked:
            revoke.append({"b_id": tid, "b_at": min(revoked)})
        elif not facts or any(f[1] is not None for f in facts) or principal_id in suspects:
            hold.append({"b_id": tid})
    _revoke(conn, t, revoke)
    if hold:
        conn.execute(update(t).where(t.c.id == bindparam("b_id")).values(held_at=at), hold)
    carried["tokens_revoked"] += len(revoke)


def _revoke(conn: Connection, table: Any, rows: list[dict[str, Any]]) -> None:
    if rows:
        conn.execute(
            update(table).where(table.c.id == bindparam("b_id")).values(revoked_at=bindparam("b_at")), rows
        )


def _settle_keys(conn: Connection, sources: Sequence[Known], carried: Counter[str]) -> set[str]:
    """Take each principal's key from the replaced ledger; return those no ledger vouches for."""
    p = s.principals
    unvouched: set[str] = set()
    for pid, key in conn.execute(select(p.c.id, p.c.public_key)):
        there = {k.keys[pid] for k in sources if pid in k.keys}
        if len(there) != 1:  # unknown, or the replaced ledgers disagree
            unvouched.add(pid)
            continue
        (current,) = there
        if current != key:
            conn.execute(update(p).where(p.c.id == pid).values(public_key=current))
            carried["keys_replaced"] += 1
    return unvouched


def _settle_admissions(
    conn: Connection, sources: Sequence[Known], unvouched: set[str], at: float, carried: Counter[str]
) -> None:
    c, h = s.checkers, s.held_admissions
    for project_id, name, version, verifiers in conn.execute(
        select(c.c.project_id, c.c.name, c.c.version, c.c.verifiers)
    ).all():
        key = (project_id, f"{name}@{version}")
        admitted = set(loads(verifiers))
        withdrawn = {v for v in admitted if _withdrawn(sources, key, v)}
        held = {v for v in admitted - withdrawn if _unvouched(sources, key, v) or v in unvouched}
        if withdrawn or held:
            kept = dumps(sorted(admitted - withdrawn - held))
            conn.execute(
                update(c)
                .where(c.c.project_id == project_id, c.c.name == name, c.c.version == version)
                .values(verifiers=kept)
            )
        if held:
            rows = [
                {"project_id": project_id, "checker": key[1], "verifier_id": v, "held_at": at}
                for v in sorted(held)
            ]
            conn.execute(insert(h), rows)
        carried["admissions_withdrawn"] += len(withdrawn)
    _drop_withdrawn_holds(conn, sources, carried)


def _drop_withdrawn_holds(conn: Connection, sources: Sequence[Known], carried: Counter[str]) -> None:
    """A hold the backup has, on an admission a replaced ledger has withdrawn since: gone."""
    h = s.held_admissions
    for project_id, ref, verifier in conn.execute(select(h.c.project_id, h.c.checker, h.c.verifier_id)).all():
        if _withdrawn(sources, (project_id, ref), verifier):  # held in the backup, withdrawn since
            conn.execute(
                h.delete().where(
                    h.c.project_id == project_id, h.c.checker == ref, h.c.verifier_id == verifier
                )
            )
            carried["admissions_withdrawn"] += 1


def _withdrawn(sources: Iterable[Known], key: _CheckerKey, verifier: str) -> bool:
    """Some replaced ledger knows the checker and neither admits nor holds the verifier."""
    return any(key in k.checkers and verifier not in k.checkers[key][0] | k.checkers[key][1] for k in sources)


def _unvouched(sources: Sequence[Known], key: _CheckerKey, verifier: str) -> bool:
    """No replaced ledger knows the checker, or one holds the admission."""
    knowing = [k.checkers[key] for k in sources if key in k.checkers]
    return not knowing or any(verifier in held for _, held in knowing)


def _settle_orgs(conn: Connection, sources: Sequence[Known], carried: Counter[str]) -> None:
    t = s.a2a_remote_orgs
    revoke: list[dict[str, Any]] = []
    for (oid,) in conn.execute(select(t.c.id).where(t.c.revoked_at.is_(None))):
        revoked = [at for k in sources if (at := k.orgs.get(oid)) is not None]
        if revoked:
            revoke.append({"b_id": oid, "b_at": min(revoked)})
    _revoke(conn, t, revoke)
    carried["remote_orgs_revoked"] += len(revoke)


def _settle_service_key(conn: Connection, sources: Sequence[Known], at: float) -> str:
    """The replaced ledger's signing key if it knew the backup's (it may have rotated since);
    else a new key, the backup's retired (still published, so its receipts verify)."""
    restored = {str(k): str(v) for k, v in conn.execute(select(s.meta.c.key, s.meta.c.value))}
    text = restored.get("service_key")
    if text is None:
        return "kept"
    mine = ServiceKey.from_text(text)
    retired = list(json.loads(restored.get("service_keys_retired", "[]")))
    for source in sources:
        if source.service_key is not None and mine.public in source.service_publics():
            current = ServiceKey.from_text(source.service_key)
            merged = _union_retired([*retired, *source.retired], current.public)
            _set_meta(conn, "service_keys_retired", json.dumps(merged, sort_keys=True))
            if current.public == mine.public:
                return "kept"
            _set_meta(conn, "service_key", source.service_key)
            return "carried"
    new = ServiceKey.generate()
    retired.append({"x": mine.public, "kid": mine.kid, "retired_at": at})
    _set_meta(conn, "service_keys_retired", json.dumps(retired, sort_keys=True))
    _set_meta(conn, "service_key", new.to_text())
    return "rotated"


def _union_retired(entries: Iterable[dict[str, Any]], current: str) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if entry["x"] != current:
            seen.setdefault(str(entry["x"]), entry)
    return sorted(seen.values(), key=lambda e: (float(e.get("retired_at", 0)), str(e["x"])))


def _set_meta(conn: Connection, key: str, value: str) -> None:
    m = s.meta
    if conn.execute(update(m).where(m.c.key == key).values(value=value)).rowcount == 0:
        conn.execute(insert(m).values(key=key, value=value))


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
