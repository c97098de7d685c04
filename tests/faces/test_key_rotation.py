"""The service signing key rotates; receipts it signed before stay verifiable by `kid`.

The rotation is run the way an operator runs it: `studiolo keys rotate` on the ledger, from
a coordinator other than the one serving (as another process would), while the server runs.
"""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from studiolo.client import Client, Completed
from studiolo.faces.cli import app
from studiolo.keys import verify as verify_signature
from tests.faces.helpers import Actors, complete, new_task, submit, verify
from tests.world import World


def _complete_one(actors: Actors, world: World, title: str) -> Completed:
    admin, agent, ver = actors.client("admin"), actors.client("agent"), actors.client("verifier")
    task = new_task(admin, title)
    attempt = agent.claim(task.id)
    cand = submit(agent, attempt, {"src/answer.txt": title.encode()}, ("src/input.txt",))
    return complete(agent, task, attempt, cand, [verify(ver, world, cand).id])


def _verifies_by_kid(jwks: dict[str, Any], done: Completed) -> bool:
    by_kid = {k["kid"]: k["x"] for k in jwks["keys"]}
    kid = done.completion.receipt["kid"]
    return kid in by_kid and verify_signature(by_kid[kid], done.completion.receipt, done.completion.signature)


def _rotate(url: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["keys", "rotate", "--database-url", url, "--json"])
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def test_rotating_the_service_key_keeps_old_receipts_verifiable(actors: Actors, world: World) -> None:
    public: Client = actors.client("agent")
    first = _complete_one(actors, world, "before the rotation")
    old_kid = first.completion.receipt["kid"]
    assert [k["kid"] for k in public.jwks()["keys"]] == [old_kid]

    rotation = _rotate(world.coord.store.url)
    assert rotation["previous_kid"] == old_kid and rotation["kid"] != old_kid

    second = _complete_one(actors, world, "after the rotation")
    assert second.completion.receipt["kid"] == rotation["kid"]  # the running server signs with it
    jwks = public.jwks()
    assert [k["kid"] for k in jwks["keys"]] == [rotation["kid"], old_kid]
    assert _verifies_by_kid(jwks, first) and _verifies_by_kid(jwks, second)
    # each receipt verifies under its own key only
    assert not verify_signature(jwks["keys"][0]["x"], first.completion.receipt, first.completion.signature)

    events = world.coord.store.read(lambda tx: list(tx.audit.iter_all()))
    rotated = [e for e in events if e.kind == "service_key.rotated"]
    assert [(e.data["previous_kid"], e.data["kid"]) for e in rotated] == [(old_kid, rotation["kid"])]
    assert world.coord.verify_audit().ok


def test_a_second_rotation_keeps_every_retired_key(actors: Actors, world: World) -> None:
    first = _complete_one(actors, world, "one")
    kids = [first.completion.receipt["kid"]]
    for _ in range(2):
        kids.append(_rotate(world.coord.store.url)["kid"])
    assert [k["kid"] for k in actors.client("agent").jwks()["keys"]] == list(reversed(kids))
    assert _verifies_by_kid(actors.client("agent").jwks(), first)
