"""Setting a project up: the ledger itself, projects, principals, tokens, grants, policies,
checkers. Every change is one audited transaction."""

from __future__ import annotations

import json
import re
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from studiolo._exceptions import Conflict, InvalidRequest, NotAuthorized, NotFound, Unauthenticated
from studiolo.core.canonical import digest_bytes
from studiolo.core.model import (
    Action,
    Checker,
    Grant,
    Policy,
    Principal,
    PrincipalKind,
    Project,
)
from studiolo.core.reasons import ErrorReason
from studiolo.keys import ServiceKey, parse_public_key, public_jwk
from studiolo.service._door import Context
from studiolo.service._ids import check_id, check_name, check_scope, hash_token
from studiolo.store import Tx

__all__ = ["AdminOps", "Issued", "KeyRotation"]

_VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,49}$")


@dataclass(frozen=True)
class KeyRotation:
    """The service key was replaced: receipts are now signed under `kid`."""

    previous_kid: str
    kid: str
    event_seq: int


@dataclass(frozen=True)
class Issued:
    """A principal and its bearer token: the token is shown once, stored hashed."""

    principal: Principal
    token: str


def _retired_keys(tx: Tx) -> list[dict[str, Any]]:
    """Public halves of replaced service keys, oldest first (`meta.service_keys_retired`)."""
    text = tx.meta.get("service_keys_retired")
    return list(json.loads(text)) if text else []


class AdminOps:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    # the ledger ------------------------------------------------------------
    def initialize(self, admin_name: str = "admin") -> Issued | None:
        """Migrate the schema to head, then create the service key and the first admin (once)."""
        self.ctx.store.upgrade()

        def run(tx: Tx) -> Issued | None:
            if tx.meta.get("service_key") is not None:
                return None
            tx.meta.set("service_key", ServiceKey.generate().to_text())
            tx.meta.set("incarnation", self.ctx.ids.new("inc"))
            issued = self.issue(tx, None, check_name(admin_name), PrincipalKind.ADMIN, None)
            self.ctx.audit(tx, None, "ledger.initialized", issued.principal, issued.principal.id)
            return issued

        return self.ctx.store.write(run)

    def authenticate(self, token: str | None) -> Principal:
        """The token's principal, through the cache (`_auth.py`): valid while the ledger's auth
        signal has not moved (SQLite on a file), else for one auth generation read per call."""
        if not token:
            raise Unauthenticated("a bearer token is required")
        digest = hash_token(token)
        signal = self.ctx.store.auth_signal
        mark = signal.value() if signal is not None else None
        if mark is not None:
            found = self.ctx.auth_cache.get(digest, mark) or self._token_principal(digest, mark)
        else:
            found = self._token_principal_per_generation(digest)
        if found is None:
            raise Unauthenticated("unknown or revoked token")
        return found

    def authenticate_cached(self, token: str | None) -> Principal | None:
        """The token's principal if it is known without reading the ledger (an entry of the
        cache under the auth signal's current value); else None: call `authenticate`.
        Never blocks: the HTTP face calls it on the event loop."""
        signal = self.ctx.store.auth_signal
        mark = signal.value() if token and signal is not None else None
        return None if mark is None else self.ctx.auth_cache.get(hash_token(token or ""), mark)

    def warm_auth_cache(self) -> int:
        """Read every live token at once (up to the cache's size) into the authentication
        cache, as `authenticate` would one by one: a server starting under a fleet does not
        pay one ledger read per agent's first request. Entries are held under the auth signal
        read first (or the auth generation read with them), so a revocation after this read
        still ends them. Returns how many were read."""
        limit = self.ctx.auth_cache.max_entries
        signal = self.ctx.store.auth_signal
        mark = signal.value() if signal is not None else None
        if mark is not None:
            rows = self.ctx.store.read(lambda tx: tx.access.live_token_principals(limit), settled=False)
            generation: Hashable = mark
        else:

            def run(tx: Tx) -> tuple[Hashable, list[tuple[str, Principal]]]:
                return tx.access.auth_generation(), tx.access.live_token_principals(limit)

            generation, rows = self.ctx.store.read(run, settled=False)
        for digest, principal in rows:
            self.ctx.auth_cache.put(digest, generation, principal)
        return len(rows)

    def _token_principal(self, digest: str, mark: int) -> Principal | None:
        """Read the token (after reading `mark`: see `authsignal.py`) and cache it under `mark`."""
        found = self.ctx.store.read(lambda tx: tx.access.principal_by_token_hash(digest), settled=False)
        if found is not None:
            self.ctx.auth_cache.put(digest, mark, found)
        return found

    def _token_principal_per_generation(self, digest: str) -> Principal | None:
        # The common case, a cached token, needs only the generation: one statement.
        hit = self.ctx.auth_cache.get(digest, self.ctx.store.auth_generation())
        if hit is not None:
            return hit

        def run(tx: Tx) -> Principal | None:
            generation = tx.access.auth_generation()
            hit = self.ctx.auth_cache.get(digest, generation)
            if hit is not None:
                return hit
            found = tx.access.principal_by_token_hash(digest)
            if found is not None:
                self.ctx.auth_cache.put(digest, generation, found)
            return found

        return self.ctx.store.read(run, settled=False)  # not shown to anyone: no fsync wait

    def jwks(self) -> dict[str, Any]:
        """The signing key first, then every retired key (newest first), each by `kid`."""

        def run(tx: Tx) -> dict[str, Any]:
            current = self.ctx.service_key(tx)
            retired = [r["x"] for r in reversed(_retired_keys(tx)) if r["x"] != current.public]
            return {"keys": [current.jwk(), *(public_jwk(x) for x in retired)]}

        return self.ctx.store.read(run)

    def rotate_service_key(self) -> KeyRotation:
        """An operator action on the ledger: sign from now on with a new key, and keep the
        old public key published so that the receipts it signed stay verifiable."""

        def run(tx: Tx) -> KeyRotation:
            old, new = self.ctx.service_key(tx), ServiceKey.generate()
            retired = [*_retired_keys(tx), {"x": old.public, "kid": old.kid, "retired_at": tx.now}]
            tx.meta.set("service_keys_retired", json.dumps(retired, sort_keys=True))
            tx.meta.set("service_key", new.to_text())
            seq = self.ctx.audit(
                tx, None, "service_key.rotated", None, new.kid, previous_kid=old.kid, kid=new.kid
            )
            return KeyRotation(old.kid, new.kid, seq)

        return self.ctx.store.write(run)

    # projects and principals -----------------------------------------------
    def projects(self, caller: Principal) -> list[Project]:
        """The projects the caller can see: every one for a service admin, else its own."""

        def run(tx: Tx) -> list[Project]:
            return [p for p in tx.access.projects() if self.ctx.sees_project(tx, caller, p.id)]

        return self.ctx.store.read(run)

    def create_project(self, caller: Principal, name: str) -> Project:
        """Create a project (a service admin only; audited)."""
        if not caller.is_service_admin:
            raise NotAuthorized("only a service administrator creates projects")

        def run(tx: Tx) -> Project:
            if tx.access.project_by_name(check_name(name, "project name")) is not None:
                raise Conflict(f"project {name!r} exists", reason=ErrorReason.CONFLICT)
            project = Project(self.ctx.ids.new("prj"), name, tx.now)
            tx.access.add_project(project)
            self.ctx.audit(tx, project.id, "project.created", caller, project.id, name=name)
            return project

        return self.ctx.store.write(run)

    def add_principal(
        self,
        caller: Principal,
        project_id: str,
        name: str,
        kind: str,
        public_key: str | None = None,
    ) -> Issued:
        """Add a principal (agent, verifier, ...) to a project and issue its first token (admin; audited)."""
        try:
            pkind = PrincipalKind(kind)
        except ValueError as exc:
            raise InvalidRequest(f"unknown principal kind {kind!r}") from exc
        key = parse_public_key(public_key) if public_key else None

        def run(tx: Tx) -> Issued:
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.ADMIN)
            issued = self.issue(tx, project_id, check_name(name), pkind, key)
            self.ctx.audit(
                tx, project_id, "principal.added", caller, issued.principal.id, name=name, kind=kind
            )
            return issued

        return self.ctx.store.write(run)

    def principals(self, caller: Principal, project_id: str) -> list[Principal]:
        """The project's principals."""

        def run(tx: Tx) -> list[Principal]:
            self.ctx.require_project(tx, caller, project_id)
            return tx.access.principals(project_id)

        return self.ctx.store.read(run)

    def rotate_token(self, caller: Principal, principal_id: str) -> Issued:
        """Revoke every token of a principal and issue a new one (self, or an admin)."""

        def run(tx: Tx) -> Issued:
            target = self._principal_for_admin(tx, caller, principal_id, allow_self=True)
            tx.access.revoke_tokens(target.id, tx.now)
            token = self.ctx.ids.token()
            tx.access.add_token(self.ctx.ids.new("tok"), target.id, hash_token(token), tx.now)
            self.ctx.audit(tx, target.project_id, "token.rotated", caller, target.id)
            return Issued(target, token)

        return self.ctx.store.write(run)

    def revoke_tokens(self, caller: Principal, principal_id: str) -> int:
        """Revoke every token of a principal (itself, or a principal it administers; audited): how many."""

        def run(tx: Tx) -> int:
            target = self._principal_for_admin(tx, caller, principal_id, allow_self=True)
            n = tx.access.revoke_tokens(target.id, tx.now)
            self.ctx.audit(tx, target.project_id, "token.revoked", caller, target.id, count=n)
            return n

        return self.ctx.store.write(run)

    def set_public_key(self, caller: Principal, principal_id: str, public_key: str) -> Principal:
        """Set the Ed25519 key a principal signs receipts with (its project's admin; audited)."""
        key = parse_public_key(public_key)

        def run(tx: Tx) -> Principal:
            target = self._principal_for_admin(tx, caller, principal_id, allow_self=False)
            tx.access.set_public_key(target.id, key)
            self.ctx.audit(tx, target.project_id, "principal.key_set", caller, target.id, key=key)
            return replace(target, public_key=key)

        return self.ctx.store.write(run)

    def issue(
        self, tx: Tx, project_id: str | None, name: str, kind: PrincipalKind, key: str | None
    ) -> Issued:
        principal = Principal(self.ctx.ids.new("prn"), project_id, name, kind, key)
        existing = [p for p in (tx.access.principals(project_id) if project_id else [])]
        if any(p.name == name for p in existing):
            raise Conflict(f"principal {name!r} exists in this project")
        tx.access.add_principal(principal, tx.now)
        token = self.ctx.ids.token()
        tx.access.add_token(self.ctx.ids.new("tok"), principal.id, hash_token(token), tx.now)
        return Issued(principal, token)

    def _principal_for_admin(
        self, tx: Tx, caller: Principal, principal_id: str, *, allow_self: bool
    ) -> Principal:
        target = tx.access.principal(check_id(principal_id, "principal id"))
        if target is None:
            raise NotFound(f"principal {principal_id} not found")
        if allow_self and target.id == caller.id:
            return target
        if target.project_id is None or not self.ctx.sees_project(tx, caller, target.project_id):
            if not caller.is_service_admin:
                raise NotFound(f"principal {principal_id} not found")
            return target
        self.ctx.require(tx, caller, target.project_id, Action.ADMIN)
        return target

    # grants ------------------------------------------------------------------
    def grant(
        self,
        caller: Principal,
        project_id: str,
        principal_id: str,
        actions: Iterable[str],
        scope: Iterable[str] = ("**",),
    ) -> Grant:
        """Grant a principal of the project actions on a path scope (admin; audited)."""
        try:
            acts = frozenset(Action(a) for a in actions)
        except ValueError as exc:
            raise InvalidRequest(f"unknown action in {list(actions)!r}") from exc
        if not acts:
            raise InvalidRequest("a grant needs at least one action")
        patterns = check_scope(scope)

        def run(tx: Tx) -> Grant:
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.ADMIN)
            target = tx.access.principal(check_id(principal_id, "principal id"))
            if target is None or target.project_id != project_id:
                raise NotFound(f"principal {principal_id} not found in this project")
            g = Grant(self.ctx.ids.new("grt"), project_id, target.id, acts, patterns, tx.now)
            tx.access.add_grant(g)
            self.ctx.audit(
                tx,
                project_id,
                "grant.created",
                caller,
                g.id,
                principal=target.id,
                actions=sorted(a.value for a in acts),
                scope=list(patterns),
            )
            return g

        return self.ctx.store.write(run)

    def revoke_grant(self, caller: Principal, grant_id: str) -> Grant:
        """Revocation is a serialized state change: it orders against every completion."""

        def run(tx: Tx) -> Grant:
            g = tx.access.grant(check_id(grant_id, "grant id"))
            if g is None or not self.ctx.sees_project(tx, caller, g.project_id):
                raise NotFound(f"grant {grant_id} not found")
            self.ctx.require(tx, caller, g.project_id, Action.ADMIN)
            if g.revoked_at is None:
                tx.access.revoke_grant(g.id, tx.now)
                self.ctx.audit(tx, g.project_id, "grant.revoked", caller, g.id, principal=g.principal_id)
            return tx.access.grant(g.id) or g

        return self.ctx.store.write(run)

    def list_grants(self, caller: Principal, project_id: str) -> list[Grant]:
        """Every grant of the project for its admins; for anyone else, their own (revoked ones too)."""

        def run(tx: Tx) -> list[Grant]:
            self.ctx.require_project(tx, caller, project_id)
            if self.ctx.can(tx, caller, project_id, Action.ADMIN):
                return tx.access.grants(project_id)
            return tx.access.grants_of(caller.id, project_id, live_only=False)

        return self.ctx.store.read(run)

    # policies and checkers ---------------------------------------------------
    def publish_policy(self, caller: Principal, project_id: str, text: str) -> Policy:
        """Publish a new default handbook. Tasks pinned to older versions keep theirs."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidRequest("a policy needs text")

        def run(tx: Tx) -> Policy:
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.ADMIN)
            latest = tx.access.latest_policy(project_id)
            version = (latest.version if latest else 0) + 1
            p = Policy(project_id, version, text, digest_bytes(text.encode()), tx.now)
            tx.access.add_policy(p)
            self.ctx.audit(tx, project_id, "policy.published", caller, str(version), digest=p.digest)
            return p

        return self.ctx.store.write(run)

    def policies(self, caller: Principal, project_id: str) -> list[Policy]:
        """Every published policy version of the project."""

        def run(tx: Tx) -> list[Policy]:
            self.ctx.require_project(tx, caller, project_id)
            return tx.access.policies(project_id)

        return self.ctx.store.read(run)

    def register_checker(
        self,
        caller: Principal,
        project_id: str,
        name: str,
        version: str,
        kind: str,
        config: Mapping[str, Any] | None = None,
        verifiers: Iterable[str] = (),
    ) -> Checker:
        """Admit a checker version and the verifier principals that may report for it."""
        if not isinstance(version, str) or not _VERSION_RE.match(version):
            raise InvalidRequest(f"invalid checker version {version!r}")
        cfg = dict(config or {})

        def run(tx: Tx) -> Checker:
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.ADMIN)
            admitted = frozenset(self._verifier(tx, project_id, v) for v in verifiers)
            c = Checker(
                project_id, check_name(name, "checker name"), version, check_name(kind, "kind"), cfg, admitted
            )
            exists = tx.access.checker(project_id, c.name, c.version) is not None
            tx.access.put_checker(c, tx.now, replace=exists)
            self.ctx.audit(
                tx,
                project_id,
                "checker.admitted",
                caller,
                c.ref,
                kind=kind,
                verifiers=sorted(admitted),
            )
            return c

        return self.ctx.store.write(run)

    def checkers(self, caller: Principal, project_id: str) -> list[Checker]:
        """The checker versions admitted in the project."""

        def run(tx: Tx) -> list[Checker]:
            self.ctx.require_project(tx, caller, project_id)
            return tx.access.checkers(project_id)

        return self.ctx.store.read(run)

    @staticmethod
    def _verifier(tx: Tx, project_id: str, principal_id: str) -> str:
        p = tx.access.principal(check_id(principal_id, "principal id"))
        if p is None or p.project_id != project_id:
            raise NotFound(f"verifier {principal_id} not found in this project")
        if p.kind is not PrincipalKind.VERIFIER or not p.public_key:
            raise InvalidRequest(
                f"{p.name} is not a verifier with a registered public key",
                reason=ErrorReason.VERIFIER_NOT_ADMITTED,
            )
        return p.id
