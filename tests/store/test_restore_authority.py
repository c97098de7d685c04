"""A restore never brings back authority revoked or replaced before it (issue 32, finding 1).

Revocations and key replacements the replaced ledger knows win over the backup; what it
cannot vouch for (it is gone) is held until an admin reconfirms it, audited."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from studiolo import NotAuthorized, StudioloError, Unauthenticated
from studiolo.core.model import Attempt, Candidate, Principal, Task
from studiolo.keys import ServiceKey, key_id, public_key_text
from studiolo.service import Coordinator
from studiolo.service._trust import receipt_facts
from studiolo.settings import Settings
from studiolo.store import Store
from studiolo.store.backup import BackupError, backup, restore
from tests.store.pgdb import fresh_database, server_url
from tests.world import World, build_world


@pytest.fixture
def world(store_url: str, tmp_path: Path) -> Iterator[World]:
    w = build_world(tmp_path, url=store_url)
    yield w
    w.coord.store.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A ledger that is gone: the restore goes into an empty database."""
    if request.param == "sqlite":
        yield Settings.sqlite_url(tmp_path / "fresh.db")
        return
    with fresh_database(server_url()) as url:
        yield url


def _token(w: World, who: Principal) -> str:
    return w.coord.rotate_token(w.admin, who.id).token


def _claim_and_candidate(w: World) -> tuple[Task, Attempt, Candidate]:
    task = w.new_task()
    att = w.coord.claim(w.agent, task.id, 600)
    cand = w.candidate(att, {"src/answer.txt": b"42\n"}, deps={"src/input.txt": 1})
    return task, att, cand


# the three attacks, with the replaced ledger readable ------------------------------------
def test_a_token_revoked_after_the_backup_stays_revoked(world: World, tmp_path: Path) -> None:
    token = _token(world, world.agent)
    file = tmp_path / "b.jsonl"
    backup(world.coord.store, file)
    world.coord.revoke_tokens(world.admin, world.agent.id)

    info = restore(world.coord.store, file)
    with pytest.raises(Unauthenticated):
        world.coord.authenticate(token)
    assert info.carried["tokens_revoked"] == 1 and info.held == ()


def test_a_grant_revoked_after_the_backup_stays_revoked(world: World, tmp_path: Path) -> None:
    file = tmp_path / "b.jsonl"
    backup(world.coord.store, file)
    world.coord.revoke_grant(world.admin, world.grants["agent"])

    info = restore(world.coord.store, file)
    with pytest.raises(NotAuthorized):
        world.coord.claim(world.agent, world.new_task().id, 600)
    assert info.carried["grants_revoked"] == 1
    revoked = {g.id for g in world.coord.list_grants(world.admin, world.project_id) if not g.live}
    assert revoked == {world.grants["agent"]}


def test_a_verifier_key_replaced_after_the_backup_stays_replaced(world: World, tmp_path: Path) -> None:
    """The response to a key theft: the stolen key signs nothing the ledger accepts, even
    after the backup taken before the replacement is restored."""
    stolen = world.verifier_key
    verifier_token = _token(world, world.verifier)
    world.verifier = world.coord.authenticate(verifier_token)  # cached under the old key
    task, _, cand = _claim_and_candidate(world)
    old_receipt = world.receipt(cand)  # signed with the key about to be stolen, in the backup
    file = tmp_path / "b.jsonl"
    backup(world.coord.store, file)
    new = Ed25519PrivateKey.generate()
    world.coord.set_public_key(world.admin, world.verifier.id, public_key_text(new))

    info = restore(world.coord.store, file)
    world.verifier = world.coord.authenticate(verifier_token)  # as the next request would
    *_, cand2 = _claim_and_candidate(world)
    with pytest.raises(StudioloError) as bad:
        world.receipt(cand2, key=stolen)
    assert bad.value.reason == "signature_invalid"
    assert world.verifier.public_key == public_key_text(new) and info.carried["keys_replaced"] == 1
    # the receipt the stolen key signed before the backup no longer stands either
    facts = world.coord.store.read(lambda tx: receipt_facts(tx, task, cand, [old_receipt.id]))
    assert old_receipt.id in facts.bad
    world.receipt(cand2, key=new)  # the new key works


def test_an_admission_withdrawn_after_the_backup_stays_withdrawn(world: World, tmp_path: Path) -> None:
    file = tmp_path / "b.jsonl"
    backup(world.coord.store, file)
    config = {"argv": ["true"]}
    world.coord.register_checker(world.admin, world.project_id, "unit", "1", "command", config, [])

    info = restore(world.coord.store, file)
    _, _, cand = _claim_and_candidate(world)
    with pytest.raises(StudioloError) as bad:
        world.receipt(cand)
    assert bad.value.reason == "verifier_not_admitted"
    assert info.carried["admissions_withdrawn"] == 1


def test_a_service_key_rotated_after_the_backup_stays_rotated(world: World, tmp_path: Path) -> None:
    file = tmp_path / "b.jsonl"
    backup(world.coord.store, file)
    rotation = world.coord.rotate_service_key()

    restore(world.coord.store, file)
    keys = [k["kid"] for k in world.coord.jwks()["keys"]]
    assert keys[0] == rotation.kid and rotation.previous_kid in keys


def test_a_remote_organisation_revoked_after_the_backup_stays_revoked(world: World, tmp_path: Path) -> None:
    world.coord.add_remote_org(world.admin, world.project_id, "acme", {"k1": ServiceKey.generate().public})
    file = tmp_path / "b.jsonl"
    backup(world.coord.store, file)
    world.coord.revoke_remote_org(world.admin, world.project_id, "acme")

    info = restore(world.coord.store, file)
    assert not world.coord.remote_org(world.admin, world.project_id, "acme").live
    assert info.carried["remote_orgs_revoked"] == 1


# the replaced ledger is gone: fail closed, reconfirm ---------------------------------------
def _restored(world: World, url: str, file: Path) -> Coordinator:
    store = Store(url, clock=world.clock, clock_source="service")
    return Coordinator(store, Settings(database_url=url), clock=world.clock)


def test_a_restore_into_an_empty_ledger_holds_every_token_and_admission(
    world: World, empty_url: str, tmp_path: Path
) -> None:
    admin_token = _token(world, world.admin)
    agent_token, verifier_token = _token(world, world.agent), _token(world, world.verifier)
    file = tmp_path / "b.jsonl"
    backup(world.coord.store, file)
    before_kid = world.coord.jwks()["keys"][0]["kid"]
    coord = _restored(world, empty_url, file)
    try:
        info = restore(coord.store, file)
        held = {h.principal_id: h for h in info.held}
        assert {world.admin.id, world.agent.id, world.verifier.id, world.human.id} <= set(held)
        assert held[world.verifier.id].admissions == ("unit@1",)
        assert set(held[world.agent.id].grants) == {world.grants["agent_read"], world.grants["agent"]}
        for token in (admin_token, agent_token, verifier_token):
            with pytest.raises(Unauthenticated):
                coord.authenticate(token)
        assert coord.checkers(world.admin, world.project_id)[0].verifiers == frozenset()
        assert coord.jwks()["keys"][0]["kid"] != before_kid  # a signing key it cannot vouch for is retired
        assert coord.held_authority() == list(info.held)

        # the operator vouches for the service admin; the admin for the others, audited
        first = coord.reconfirm_locally(world.admin.id)
        assert first.event_seq is not None and first.tokens
        admin = coord.authenticate(admin_token)
        with pytest.raises(Unauthenticated):
            coord.authenticate(agent_token)
        done = coord.reconfirm(admin, world.agent.id)
        assert coord.authenticate(agent_token).id == world.agent.id
        assert set(done.grants) == {world.grants["agent_read"], world.grants["agent"]}
        vouched = coord.reconfirm(admin, world.verifier.id)
        assert vouched.admissions == ("unit@1",) and vouched.key_id == key_id(world.verifier.public_key or "")
        assert coord.checkers(admin, world.project_id)[0].verifiers == {world.verifier.id}
        assert coord.reconfirm(admin, world.agent.id).event_seq is None  # nothing left to vouch for

        events = coord.store.read(lambda tx: tx.audit.events(world.project_id, 0, 10_000))
        reconfirmed = [e for e in events if e.kind == "principal.reconfirmed"]
        assert [(e.subject, e.actor, e.data["by"]) for e in reconfirmed] == [
            (world.agent.id, admin.id, admin.id),
            (world.verifier.id, admin.id, admin.id),
        ]
        assert reconfirmed[1].data["admissions"] == ["unit@1"]
        assert coord.verify_audit().ok
    finally:
        coord.store.dispose()


def test_only_an_admin_of_the_principal_reconfirms(world: World, empty_url: str, tmp_path: Path) -> None:
    agent_token = _token(world, world.agent)
    file = tmp_path / "b.jsonl"
    backup(world.coord.store, file)
    coord = _restored(world, empty_url, file)
    try:
        restore(coord.store, file)
        coord.reconfirm_locally(world.agent.id)
        agent = coord.authenticate(agent_token)
        with pytest.raises(StudioloError):  # an agent vouches for nobody, itself included
            coord.reconfirm(agent, world.human.id)
        with pytest.raises(StudioloError):
            coord.reconfirm(agent, world.agent.id)
    finally:
        coord.store.dispose()


def test_a_grant_the_replaced_ledger_never_saw_holds_its_principals_tokens(
    world: World, tmp_path: Path
) -> None:
    """The replaced ledger was itself restored from an older backup: it knows the agent's
    token but not a grant made later, which may have been revoked in a ledger now gone."""
    token = _token(world, world.agent)
    older, newer = tmp_path / "older.jsonl", tmp_path / "newer.jsonl"
    backup(world.coord.store, older)
    world.coord.grant(world.admin, world.project_id, world.agent.id, ["observe"], ["**"])
    backup(world.coord.store, newer)
    restore(world.coord.store, older)
    assert world.coord.authenticate(token).id == world.agent.id

    info = restore(world.coord.store, newer)
    assert world.agent.id in {h.principal_id for h in info.held}
    with pytest.raises(Unauthenticated):
        world.coord.authenticate(token)


def test_a_held_token_stays_held_across_another_restore(world: World, tmp_path: Path) -> None:
    """Restoring the same backup again does not vouch for what the first restore held."""
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    token = _token(world, world.agent)
    file = tmp_path / "b.jsonl"
    backup(world.coord.store, file)
    for url in (Settings.sqlite_url(first), Settings.sqlite_url(second)):
        coord = _restored(world, url, file)
        try:
            restore(coord.store, file)
            held_file = tmp_path / "held.jsonl"
            backup(coord.store, held_file)
            restore(coord.store, held_file)  # its own backup, restored onto itself
            with pytest.raises(Unauthenticated):
                coord.authenticate(token)
            assert world.agent.id in {h.principal_id for h in coord.held_authority()}
        finally:
            coord.store.dispose()


def test_a_move_to_another_back_end_names_the_ledger_it_replaces(
    world: World, empty_url: str, tmp_path: Path
) -> None:
    token = _token(world, world.agent)
    file = tmp_path / "b.jsonl"
    backup(world.coord.store, file)
    world.coord.revoke_grant(world.admin, world.grants["agent"])
    coord = _restored(world, empty_url, file)
    try:
        info = restore(coord.store, file, previous=world.coord.store)
        assert info.held == () and info.carried["grants_revoked"] == 1
        assert coord.authenticate(token).id == world.agent.id
        assert coord.jwks() == world.coord.jwks()
        typo = Store(Settings.sqlite_url(tmp_path / "typo.db"))
        with pytest.raises(BackupError):  # a mistyped previous ledger vouches for nothing
            restore(coord.store, file, previous=typo)
        typo.dispose()
    finally:
        coord.store.dispose()


def test_a_held_token_revoked_before_its_reconfirmation_stays_dead(
    world: World, empty_url: str, tmp_path: Path
) -> None:
    admin_token, agent_token = _token(world, world.admin), _token(world, world.agent)
    file = tmp_path / "b.jsonl"
    backup(world.coord.store, file)
    coord = _restored(world, empty_url, file)
    try:
        restore(coord.store, file)
        coord.reconfirm_locally(world.admin.id)
        admin = coord.authenticate(admin_token)
        coord.revoke_tokens(admin, world.agent.id)
        assert coord.reconfirm(admin, world.agent.id).tokens == ()
        with pytest.raises(Unauthenticated):
            coord.authenticate(agent_token)
        # naming a checker's verifiers anew ends their holds
        coord.register_checker(admin, world.project_id, "unit", "1", "command", {}, [world.verifier.id])
        held = {h.principal_id: h for h in coord.held_authority()}
        assert held[world.verifier.id].admissions == ()  # its tokens are still held
        assert coord.checkers(admin, world.project_id)[0].verifiers == {world.verifier.id}
    finally:
        coord.store.dispose()
