"""Reconfirming the authority a restore held (docs/operations.md, "Backup and restore").

A restore holds every token and verifier admission that the ledger it replaced could not
vouch for (`studiolo.store.authority`). A held token authenticates nobody and a held
admission admits no verifier, until someone who may administer the principal vouches for it
here: its project's admin or a service admin over the API, or the operator on the local
ledger (the service admins' own tokens, which nobody else can vouch for). Each
reconfirmation is one audited transition, `principal.reconfirmed`, naming the tokens, the
admissions, the verifier key and the live grants it vouched for.
"""

from __future__ import annotations

from dataclasses import dataclass

from studiolo._exceptions import NotFound
from studiolo.core.model import Action, Principal
from studiolo.keys import key_id
from studiolo.service._door import Context
from studiolo.service._ids import check_id
from studiolo.store import Tx
from studiolo.store.authority import HeldPrincipal, held_principals

__all__ = ["ReconfirmOps", "Reconfirmed"]


@dataclass(frozen=True)
class Reconfirmed:
    """What a reconfirmation released (empty when nothing of the principal was held)."""

    principal_id: str
    tokens: tuple[str, ...]
    admissions: tuple[str, ...]  # checker refs (`name@version`)
    grants: tuple[str, ...]  # the live grants it vouched for
    key_id: str | None  # the verifier key it vouched for
    event_seq: int | None  # None: nothing was held, nothing recorded


class ReconfirmOps:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def reconfirm(self, caller: Principal, principal_id: str) -> Reconfirmed:
        """Vouch for a principal whose tokens or verifier admissions a restore held: they work
        again (its project's admin, or a service admin; audited as `principal.reconfirmed`)."""

        def run(tx: Tx) -> Reconfirmed:
            return self._vouch_for(tx, caller, self._administered(tx, caller, principal_id))

        return self.ctx.store.write(run)

    def reconfirm_locally(self, principal_id: str) -> Reconfirmed:
        """`reconfirm` by the operator on the local ledger, with no token (audited, no actor):
        how the service admins' own tokens come back after a restore that held them."""

        def run(tx: Tx) -> Reconfirmed:
            target = tx.access.principal(check_id(principal_id, "principal id"))
            if target is None:
                raise NotFound(f"principal {principal_id} not found")
            return self._vouch_for(tx, None, target)

        return self.ctx.store.write(run)

    def held_authority(self) -> list[HeldPrincipal]:
        """Every principal whose authority a restore holds, and what of it (an operator read)."""

        return list(self.ctx.store.read(lambda tx: held_principals(tx.access)))

    def _administered(self, tx: Tx, caller: Principal, principal_id: str) -> Principal:
        """The principal, if the caller administers it (never itself: a held token cannot ask)."""
        target = tx.access.principal(check_id(principal_id, "principal id"))
        if target is None or target.id == caller.id:
            raise NotFound(f"principal {principal_id} not found")
        if target.project_id is None or not self.ctx.sees_project(tx, caller, target.project_id):
            if not caller.is_service_admin:
                raise NotFound(f"principal {principal_id} not found")
            return target
        self.ctx.require(tx, caller, target.project_id, Action.ADMIN)
        return target

    def _vouch_for(self, tx: Tx, caller: Principal | None, target: Principal) -> Reconfirmed:
        held = tx.access.held_of(target.id)
        grants = tx.access.grants_of(target.id, target.project_id) if target.project_id else []
        kid = key_id(target.public_key) if target.public_key else None
        if held.empty:
            return Reconfirmed(target.id, (), (), (), kid, None)
        tx.access.release(held)
        seq = self.ctx.audit(
            tx,
            target.project_id,
            "principal.reconfirmed",
            caller,
            target.id,
            by="operator" if caller is None else caller.id,
            tokens=list(held.tokens),
            admissions=list(held.admissions),
            grants=[g.id for g in grants],
            key_id=kid,
        )
        return Reconfirmed(target.id, held.tokens, held.admissions, tuple(g.id for g in grants), kid, seq)
