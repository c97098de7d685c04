"""Projects, principals, tokens, grants, policies and checkers."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Integer, Select, Text, bindparam, func, insert, select, update

from studiolo.core.model import Action, Checker, Grant, Policy, Principal, PrincipalKind, Project
from studiolo.store import schema as s
from studiolo.store._json import dumps, loads
from studiolo.store._raw import Bare, Raw, columns

__all__ = ["AccessRepo", "HeldAuthority"]

# Hot-path statements are built once: SQLAlchemy then reuses their compiled form and cache key.
_PRINCIPAL = select(s.principals).where(s.principals.c.id == bindparam("id"))
_GRANTS_OF = (
    select(s.grants)
    .where(s.grants.c.principal_id == bindparam("who"), s.grants.c.project_id == bindparam("p"))
    .order_by(s.grants.c.created_at)
)
# Read on every authentication where there is no auth signal (PostgreSQL): prepared SQL.
_AUTH_GENERATION = """SELECT "key", value FROM meta WHERE "key" IN ('incarnation', 'auth_generation')"""
_BUMP_GENERATION = (
    update(s.meta)
    .where(s.meta.c.key == "auth_generation")
    .values(value=func.cast(func.cast(s.meta.c.value, Integer) + 1, Text))
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
        self._c.execute(insert(s.projects).values(**vars(project)))

    def project(self, project_id: str) -> Project | None:
        row = self._c.execute(select(s.projects).where(s.projects.c.id == project_id)).first()
        return Project(row.id, row.name, row.created_at) if row else None

    def project_by_name(self, name: str) -> Project | None:
        row = self._c.execute(select(s.projects).where(s.projects.c.name == name)).first()
        return Project(row.id, row.name, row.created_at) if row else None

    def projects(self) -> list[Project]:
        rows = self._c.execute(select(s.projects).order_by(s.projects.c.created_at))
        return [Project(r.id, r.name, r.created_at) for r in rows]

    # principals and tokens
    def add_principal(self, p: Principal, at: float) -> None:
        self._c.execute(
            insert(s.principals).values(
                id=p.id,
                project_id=p.project_id,
                name=p.name,
                kind=p.kind.value,
                public_key=p.public_key,
                created_at=at,
            )
        )

    def principal(self, principal_id: str) -> Principal | None:
        row = self._c.execute(_PRINCIPAL, {"id": principal_id}).first()
        return _principal(row) if row else None

    def principals(self, project_id: str) -> list[Principal]:
        rows = self._c.execute(
            select(s.principals)
            .where(s.principals.c.project_id == project_id)
            .order_by(s.principals.c.created_at)
        )
        return [_principal(r) for r in rows]

    def set_public_key(self, principal_id: str, public_key: str | None) -> None:
        self._c.execute(
            update(s.principals).where(s.principals.c.id == principal_id).values(public_key=public_key)
        )
        self._bump_auth_generation()

    def add_token(self, token_id: str, principal_id: str, token_hash: str, at: float) -> None:
        self._c.execute(
            insert(s.tokens).values(
                id=token_id, principal_id=principal_id, token_hash=token_hash, created_at=at
            )
        )

    def principal_by_token_hash(self, token_hash: str) -> Principal | None:
        row = self._c.execute(_live_tokens().where(s.tokens.c.token_hash == token_hash)).first()
        return _principal(row) if row else None

    def live_token_principals(self, limit: int) -> list[tuple[str, Principal]]:
        """Up to `limit` unrevoked tokens (their hashes) with their principals: a cache's warm-up."""
        rows = self._c.execute(_live_tokens().limit(limit)).all()
        return [(row.token_hash, _principal(row)) for row in rows]

    def revoke_tokens(self, principal_id: str, at: float) -> int:
        result = self._c.execute(
            update(s.tokens)
            .where(s.tokens.c.principal_id == principal_id, s.tokens.c.revoked_at.is_(None))
            .values(revoked_at=at)
        )
        self._bump_auth_generation()
        return int(result.rowcount)

    def auth_generation(self) -> tuple[str, str]:
        """(incarnation, auth generation): what an authentication cache entry is valid for."""
        return _generation(self._raw.all(_AUTH_GENERATION, {}))

    def _bump_auth_generation(self) -> None:
        """Every change that can end a token's or a grant's power calls this (`_auth.py`)."""
        self.auth_changed = True
        if self._c.execute(_BUMP_GENERATION).rowcount == 0:
            self._c.execute(insert(s.meta).values(key="auth_generation", value="1"))

    # grants
    def add_grant(self, g: Grant) -> None:
        self._live.clear()
        self._c.execute(
            insert(s.grants).values(
                id=g.id,
                project_id=g.project_id,
                principal_id=g.principal_id,
                actions=dumps(sorted(a.value for a in g.actions)),
                scope=dumps(list(g.scope)),
                created_at=g.created_at,
            )
        )

    def grant(self, grant_id: str) -> Grant | None:
        row = self._c.execute(select(s.grants).where(s.grants.c.id == grant_id)).first()
        return _grant(row) if row else None

    def grants_of(self, principal_id: str, project_id: str, live_only: bool = True) -> list[Grant]:
        params = {"who": principal_id, "p": project_id}
        if not live_only:
            return [_grant(r) for r in self._c.execute(_GRANTS_OF, params)]
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
        q = select(s.grants).where(s.grants.c.project_id == project_id)
        return [_grant(r) for r in self._c.execute(q.order_by(s.grants.c.created_at))]

    def revoke_grant(self, grant_id: str, at: float) -> None:
        self._live.clear()
        self._c.execute(update(s.grants).where(s.grants.c.id == grant_id).values(revoked_at=at))
        self._bump_auth_generation()

    # policies
    def add_policy(self, p: Policy) -> None:
        self._c.execute(insert(s.policies).values(**vars(p)))

    def latest_policy(self, project_id: str) -> Policy | None:
        row = self._c.execute(
            select(s.policies)
            .where(s.policies.c.project_id == project_id)
            .order_by(s.policies.c.version.desc())
            .limit(1)
        ).first()
        return _policy(row) if row else None

    def policy(self, project_id: str, version: int) -> Policy | None:
        row = self._c.execute(
            select(s.policies).where(s.policies.c.project_id == project_id, s.policies.c.version == version)
        ).first()
        return _policy(row) if row else None

    def policies(self, project_id: str) -> list[Policy]:
        rows = self._c.execute(
            select(s.policies).where(s.policies.c.project_id == project_id).order_by(s.policies.c.version)
        )
        return [_policy(r) for r in rows]

    # checkers
    def put_checker(self, c: Checker, at: float, *, replace: bool) -> None:
        values: dict[str, Any] = {
            "kind": c.kind,
            "config": dumps(dict(c.config)),
            "verifiers": dumps(sorted(c.verifiers)),
        }
        if replace:
            self._c.execute(
                update(s.checkers).where(*_checker_key(c.project_id, c.name, c.version)).values(**values)
            )
            held = s.held_admissions.c  # the admin names the admitted verifiers anew: nothing stays held
            self._c.execute(
                s.held_admissions.delete().where(held.project_id == c.project_id, held.checker == c.ref)
            )
        else:
            self._c.execute(
                insert(s.checkers).values(
                    project_id=c.project_id, name=c.name, version=c.version, created_at=at, **values
                )
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
        tokens = self._c.execute(
            select(s.tokens.c.id)
            .where(s.tokens.c.principal_id == principal_id, *_HELD_TOKEN)
            .order_by(s.tokens.c.created_at, s.tokens.c.id)
        ).scalars()
        held = s.held_admissions.c
        refs = self._c.execute(
            select(held.checker).where(held.verifier_id == principal_id).order_by(held.checker)
        ).scalars()
        return HeldAuthority(principal_id, tuple(tokens), tuple(refs))

    def held_principals(self) -> list[str]:
        """Every principal with a held token or admission, in id order."""
        tokens = select(s.tokens.c.principal_id).where(*_HELD_TOKEN)
        admissions = select(s.held_admissions.c.verifier_id)
        rows = self._c.execute(tokens.union(admissions)).scalars()
        return sorted(set(rows))

    def release(self, held: HeldAuthority) -> None:
        """Reconfirm: the held tokens authenticate again, the held admissions admit again."""
        if held.tokens:
            self._c.execute(update(s.tokens).where(s.tokens.c.id.in_(held.tokens)).values(held_at=None))
        rows = s.held_admissions.c
        project = select(s.principals.c.project_id).where(s.principals.c.id == held.principal_id)
        project_id = self._c.execute(project).scalar()
        for ref in held.admissions:
            name, _, version = ref.partition("@")
            checker = self.checker(str(project_id), name, version)
            if checker is not None:
                admitted = dumps(sorted(checker.verifiers | {held.principal_id}))
                self._c.execute(
                    update(s.checkers)
                    .where(*_checker_key(checker.project_id, name, version))
                    .values(verifiers=admitted)
                )
        self._c.execute(s.held_admissions.delete().where(rows.verifier_id == held.principal_id))


@dataclass(frozen=True)
class HeldAuthority:
    """What of a principal's authority a restore held: token ids, checker refs (`name@version`)."""

    principal_id: str
    tokens: tuple[str, ...]
    admissions: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not self.tokens and not self.admissions


_HELD_TOKEN = (s.tokens.c.held_at.is_not(None), s.tokens.c.revoked_at.is_(None))


def _checker_key(project_id: str, name: str, version: str) -> tuple[Any, ...]:
    return (
        s.checkers.c.project_id == project_id,
        s.checkers.c.name == name,
        s.checkers.c.version == version,
    )


def _live_tokens() -> Select[Any]:
    """Live tokens' hashes (not revoked, not held by a restore) with their principals' columns."""
    return (
        select(s.tokens.c.token_hash, *s.principals.c)
        .join(s.principals, s.tokens.c.principal_id == s.principals.c.id)
        .where(s.tokens.c.revoked_at.is_(None), s.tokens.c.held_at.is_(None))
    )


def _principal(row: Any) -> Principal:
    return Principal(row.id, row.project_id, row.name, PrincipalKind(row.kind), row.public_key)


def _grant(row: Sequence[Any]) -> Grant:
    """A grant from its columns in table order (a SQLAlchemy row or a driver tuple)."""
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


def _policy(row: Any) -> Policy:
    return Policy(row.project_id, row.version, row.text, row.digest, row.created_at)


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
