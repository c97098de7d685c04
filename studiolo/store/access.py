"""Projects, principals, tokens, grants, policies and checkers."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from studiolo.core.model import Action, Checker, Grant, Policy, Principal, PrincipalKind, Project
from studiolo.store import schema as s
from studiolo.store._json import dumps, loads
from studiolo.store._raw import Bare, Raw, columns, in_list, in_params

__all__ = ["AccessRepo", "HeldAuthority"]

_PROJECTS = f"SELECT {columns(s.projects, 'p')} FROM projects p"
_PRINCIPALS = f"SELECT {columns(s.principals, 'p')} FROM principals p"
_GRANTS = f"SELECT {columns(s.grants, 'g')} FROM grants g"
_POLICIES = f"SELECT {columns(s.policies, 'p')} FROM policies p"
# Live tokens' hashes (not revoked, not held by a restore) with their principals' columns.
_LIVE_TOKENS = (
    f"SELECT t.token_hash, {columns(s.principals, 'p')}"
    " FROM tokens t JOIN principals p ON t.principal_id = p.id"
    " WHERE t.revoked_at IS NULL AND t.held_at IS NULL"
)
_HELD_TOKEN = "held_at IS NOT NULL AND revoked_at IS NULL"
_CHECKER_KEY = " WHERE project_id = :p AND name = :n AND version = :v"
# Read on every authentication where there is no auth signal (PostgreSQL): prepared SQL.
_AUTH_GENERATION = """SELECT "key", value FROM meta WHERE "key" IN ('incarnation', 'auth_generation')"""
_BUMP_GENERATION = (
    """UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE "key" = 'auth_generation'"""
)
# Prepared SQL (see `_raw`) for the statements every completion runs.
_LIVE_GRANTS_OF = (
    f"SELECT {columns(s.grants, 'g')} FROM grants g"
    " WHERE g.principal_id = :who AND g.project_id = :p AND g.revoked_at IS NULL ORDER BY g.created_at"
)
_CHECKER = (
    f"SELECT {columns(s.checkers, 'c')} FROM checkers c"
    " WHERE c.project_id = :p AND c.name = :n AND c.version = :v"
)
_CHECKERS = (
    f"SELECT {columns(s.checkers, 'c')} FROM checkers c WHERE c.project_id = :p ORDER BY c.name, c.version"
)


class AccessRepo:
    def __init__(self, conn: Connection) -> None:
        self._c = conn
        self._raw = Raw(conn)
        # (principal, project) → live grants, as this transaction read them: an operation
        # checks authority more than once (read the task, then claim it). Grant writes clear it.
        self._live: dict[tuple[str, str], tuple[Grant, ...]] = {}
        self.auth_changed = False  # this transaction moved the auth generation (`authsignal.py`)

    # projects
    def add_project(self, project: Project) -> None:
        sql = "INSERT INTO projects (id, name, created_at) VALUES (:id, :name, :created_at)"
        self._raw.run(sql, vars(project))

    def project(self, project_id: str) -> Project | None:
        row = self._raw.one(_PROJECTS + " WHERE p.id = :id", {"id": project_id})
        return Project(*row) if row else None

    def project_by_name(self, name: str) -> Project | None:
        row = self._raw.one(_PROJECTS + " WHERE p.name = :name", {"name": name})
        return Project(*row) if row else None

    def projects(self) -> list[Project]:
        return [Project(*r) for r in self._raw.all(_PROJECTS + " ORDER BY p.created_at", {})]

    # principals and tokens
    def add_principal(self, p: Principal, at: float) -> None:
        values = {
            "id": p.id,
            "project_id": p.project_id,
            "name": p.name,
            "kind": p.kind.value,
            "public_key": p.public_key,
            "created_at": at,
        }
        self._raw.run(
            "INSERT INTO principals (id, project_id, name, kind, public_key, created_at)"
            " VALUES (:id, :project_id, :name, :kind, :public_key, :created_at)",
            values,
        )

    def principal(self, principal_id: str) -> Principal | None:
        row = self._raw.one(_PRINCIPALS + " WHERE p.id = :id", {"id": principal_id})
        return _principal(row) if row else None

    def principals(self, project_id: str) -> list[Principal]:
        rows = self._raw.all(
            _PRINCIPALS + " WHERE p.project_id = :p ORDER BY p.created_at", {"p": project_id}
        )
        return [_principal(r) for r in rows]

    def set_public_key(self, principal_id: str, public_key: str | None) -> None:
        sql = "UPDATE principals SET public_key = :key WHERE id = :id"
        self._raw.run(sql, {"id": principal_id, "key": public_key})
        self._bump_auth_generation()

    def add_token(self, token_id: str, principal_id: str, token_hash: str, at: float) -> None:
        self._raw.run(
            "INSERT INTO tokens (id, principal_id, token_hash, created_at) VALUES (:id, :who, :hash, :at)",
            {"id": token_id, "who": principal_id, "hash": token_hash, "at": at},
        )

    def principal_by_token_hash(self, token_hash: str) -> Principal | None:
        row = self._raw.one(_LIVE_TOKENS + " AND t.token_hash = :hash", {"hash": token_hash})
        return _principal(row[1:]) if row else None

    def live_token_principals(self, limit: int) -> list[tuple[str, Principal]]:
        """Up to `limit` unrevoked tokens (their hashes) with their principals: a cache's warm-up."""
        rows = self._raw.all(_LIVE_TOKENS + " LIMIT :limit", {"limit": limit})
        return [(row[0], _principal(row[1:])) for row in rows]

    def revoke_tokens(self, principal_id: str, at: float) -> int:
        sql = "UPDATE tokens SET revoked_at = :at WHERE principal_id = :who AND revoked_at IS NULL"
        count = self._raw.run(sql, {"who": principal_id, "at": at})
        self._bump_auth_generation()
        return count

    def auth_generation(self) -> tuple[str, str]:
        """(incarnation, auth generation): what an authentication cache entry is valid for."""
        return _generation(self._raw.all(_AUTH_GENERATION, {}))

    def _bump_auth_generation(self) -> None:
        """Every change that can end a token's or a grant's power calls this (`_auth.py`)."""
        self.auth_changed = True
        if self._raw.run(_BUMP_GENERATION, {}) == 0:
            self._raw.run("""INSERT INTO meta ("key", value) VALUES ('auth_generation', '1')""", {})

    # grants
    def add_grant(self, g: Grant) -> None:
        self._live.clear()
        values = {
            "id": g.id,
            "project_id": g.project_id,
            "principal_id": g.principal_id,
            "actions": dumps(sorted(a.value for a in g.actions)),
            "scope": dumps(list(g.scope)),
            "created_at": g.created_at,
        }
        self._raw.run(
            "INSERT INTO grants (id, project_id, principal_id, actions, scope, created_at)"
            " VALUES (:id, :project_id, :principal_id, :actions, :scope, :created_at)",
            values,
        )

    def grant(self, grant_id: str) -> Grant | None:
        row = self._raw.one(_GRANTS + " WHERE g.id = :id", {"id": grant_id})
        return _grant(row) if row else None

    def grants_of(self, principal_id: str, project_id: str, live_only: bool = True) -> list[Grant]:
        if not live_only:
            sql = _GRANTS + " WHERE g.principal_id = :who AND g.project_id = :p ORDER BY g.created_at"
            return [_grant(r) for r in self._raw.all(sql, {"who": principal_id, "p": project_id})]
        return self.live_grants_later(principal_id, project_id)()

    def live_grants_later(self, principal_id: str, project_id: str) -> Callable[[], list[Grant]]:
        """`grants_of(...)` (live only), its read sent now and answered when called (`Raw.later`)."""
        key = (principal_id, project_id)
        known = self._live.get(key)
        if known is not None:
            return lambda: list(known)
        rows = self._raw.later(_LIVE_GRANTS_OF, {"who": principal_id, "p": project_id})

        def live() -> list[Grant]:
            found = self._live.get(key)
            if found is None:
                found = self._live[key] = tuple(_grant_of_row(tuple(r)) for r in rows())
            return list(found)

        return live

    def grants(self, project_id: str) -> list[Grant]:
        rows = self._raw.all(_GRANTS + " WHERE g.project_id = :p ORDER BY g.created_at", {"p": project_id})
        return [_grant(r) for r in rows]

    def revoke_grant(self, grant_id: str, at: float) -> None:
        self._live.clear()
        self._raw.run("UPDATE grants SET revoked_at = :at WHERE id = :id", {"id": grant_id, "at": at})
        self._bump_auth_generation()

    # policies
    def add_policy(self, p: Policy) -> None:
        self._raw.run(
            "INSERT INTO policies (project_id, version, text, digest, created_at)"
            " VALUES (:project_id, :version, :text, :digest, :created_at)",
            vars(p),
        )

    def latest_policy(self, project_id: str) -> Policy | None:
        sql = _POLICIES + " WHERE p.project_id = :p ORDER BY p.version DESC LIMIT 1"
        row = self._raw.one(sql, {"p": project_id})
        return Policy(*row) if row else None

    def policy(self, project_id: str, version: int) -> Policy | None:
        row = self._raw.one(
            _POLICIES + " WHERE p.project_id = :p AND p.version = :v", {"p": project_id, "v": version}
        )
        return Policy(*row) if row else None

    def policies(self, project_id: str) -> list[Policy]:
        rows = self._raw.all(_POLICIES + " WHERE p.project_id = :p ORDER BY p.version", {"p": project_id})
        return [Policy(*r) for r in rows]

    # checkers
    def put_checker(self, c: Checker, at: float, *, replace: bool) -> None:
        values: dict[str, Any] = {
            "p": c.project_id,
            "n": c.name,
            "v": c.version,
            "kind": c.kind,
            "config": dumps(dict(c.config)),
            "verifiers": dumps(sorted(c.verifiers)),
        }
        if replace:
            sql = "UPDATE checkers SET kind = :kind, config = :config, verifiers = :verifiers" + _CHECKER_KEY
            self._raw.run(sql, values)
            # the admin names the admitted verifiers anew: nothing stays held
            sql = "DELETE FROM held_admissions WHERE project_id = :p AND checker = :ref"
            self._raw.run(sql, {"p": c.project_id, "ref": c.ref})
        else:
            self._raw.run(
                "INSERT INTO checkers (project_id, name, version, kind, config, verifiers, created_at)"
                " VALUES (:p, :n, :v, :kind, :config, :verifiers, :at)",
                values | {"at": at},
            )

    def checker(self, project_id: str, name: str, version: str) -> Checker | None:
        row = self._raw.one(_CHECKER, {"p": project_id, "n": name, "v": version})
        return _checker(row) if row else None

    def checkers(self, project_id: str, refs: Iterable[str] | None = None) -> list[Checker]:
        return self.checkers_later(project_id, refs)()

    def checkers_later(
        self, project_id: str, refs: Iterable[str] | None = None
    ) -> Callable[[], list[Checker]]:
        """`checkers(...)`, its read sent now and answered when called (`Raw.later`)."""
        rows = self._raw.later(_CHECKERS, {"p": project_id})
        wanted = None if refs is None else set(refs)

        def found() -> list[Checker]:
            every = [_checker(r) for r in rows()]
            return every if wanted is None else [c for c in every if c.ref in wanted]

        return found

    # authority a restore held (`store/authority.py`) ------------------------------------
    def held_of(self, principal_id: str) -> HeldAuthority:
        """The principal's tokens and verifier admissions that wait for a reconfirmation."""
        params = {"who": principal_id}
        sql = f"SELECT id FROM tokens WHERE principal_id = :who AND {_HELD_TOKEN} ORDER BY created_at, id"
        tokens = tuple(r[0] for r in self._raw.all(sql, params))
        sql = "SELECT checker FROM held_admissions WHERE verifier_id = :who ORDER BY checker"
        refs = tuple(r[0] for r in self._raw.all(sql, params))
        return HeldAuthority(principal_id, tokens, refs)

    def held_principals(self) -> list[str]:
        """Every principal with a held token or admission, in id order."""
        tokens = f"SELECT principal_id FROM tokens WHERE {_HELD_TOKEN}"
        sql = tokens + " UNION SELECT verifier_id FROM held_admissions"
        return sorted({r[0] for r in self._raw.all(sql, {})})

    def release(self, held: HeldAuthority) -> None:
        """Reconfirm: the held tokens authenticate again, the held admissions admit again."""
        if held.tokens:
            sql = "UPDATE tokens SET held_at = NULL WHERE id IN " + in_list("t", len(held.tokens))
            self._raw.run(sql, in_params("t", held.tokens))
        who = {"who": held.principal_id}
        row = self._raw.one("SELECT project_id FROM principals WHERE id = :who", who)
        project_id = row[0] if row else None
        for ref in held.admissions:
            name, _, version = ref.partition("@")
            checker = self.checker(str(project_id), name, version)
            if checker is not None:
                admitted = dumps(sorted(checker.verifiers | {held.principal_id}))
                key = {"p": checker.project_id, "n": name, "v": version}
                self._raw.run(
                    "UPDATE checkers SET verifiers = :verifiers" + _CHECKER_KEY, key | {"verifiers": admitted}
                )
        self._raw.run("DELETE FROM held_admissions WHERE verifier_id = :who", who)


@dataclass(frozen=True)
class HeldAuthority:
    """What of a principal's authority a restore held: token ids, checker refs (`name@version`)."""

    principal_id: str
    tokens: tuple[str, ...]
    admissions: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not self.tokens and not self.admissions


def _principal(row: Sequence[Any]) -> Principal:
    principal_id, project_id, name, kind, public_key, _created_at = row
    return Principal(principal_id, project_id, name, PrincipalKind(kind), public_key)


def _grant(row: Sequence[Any]) -> Grant:
    """A grant from its columns in table order."""
    gid, project_id, principal_id, actions, scope, created_at, revoked_at = row
    return Grant(
        id=gid,
        project_id=project_id,
        principal_id=principal_id,
        actions=frozenset(Action(a) for a in loads(actions)),
        scope=tuple(loads(scope)),
        created_at=created_at,
        revoked_at=revoked_at,
    )


@functools.lru_cache(maxsize=4096)
def _grant_of_row(row: tuple[Any, ...]) -> Grant:
    """`_grant`, remembered by the whole row (revocation included): every write that checks
    authority reads the caller's live grants, and parsing one (two JSON texts, an enum per
    action, a frozen dataclass) costs ~10 µs. A Grant is immutable, so sharing it is safe."""
    return _grant(row)


def _checker(row: Sequence[Any]) -> Checker:
    project_id, name, version, kind, config, verifiers, _created_at = row
    return Checker(
        project_id=project_id,
        name=name,
        version=version,
        kind=kind,
        config=loads(config),
        verifiers=frozenset(loads(verifiers)),
    )


def auth_generation_of(bare: Bare) -> tuple[str, str]:
    """`AccessRepo.auth_generation` in one statement outside any transaction (`Store.glance`)."""
    return _generation(bare.all(_AUTH_GENERATION, {}))


def _generation(rows: Iterable[Sequence[Any]]) -> tuple[str, str]:
    found = {str(key): str(value) for key, value in rows}
    return found.get("incarnation", ""), found.get("auth_generation", "0")
