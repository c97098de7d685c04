"""Retention, holds and deletion of bytes over HTTP (the client) and the CLI: every change
through the door, deleted bytes answer 410 `bytes_deleted` with when, who and why, never a 500."""

from __future__ import annotations

import json

import httpx
import pytest
from starlette.testclient import TestClient

from studiolo._exceptions import BytesDeleted, Conflict, NotAuthorized
from studiolo.faces.cli import app
from studiolo.keys import public_key_text
from studiolo.keys import verify as verify_signature
from tests.faces.helpers import Actors, complete, new_task, submit, verify
from tests.faces.test_cli import _cli_state, cli, js, runner  # noqa: F401 - the CLI's state directory, per test
from tests.faces.web.conftest import sign_in, web  # noqa: F401 - the dashboard over the same world


def _published_secret(actors: Actors) -> tuple[str, str]:
    admin, agent, ver = actors.client("admin"), actors.client("agent"), actors.client("verifier")
    task = new_task(admin)
    attempt = agent.claim(task.id)
    cand = submit(agent, attempt, {"src/answer.txt": b"PASSWORD=swordfish\n"})
    complete(agent, task, attempt, cand, [verify(ver, actors.world, cand).id])
    digest = cand.files["src/answer.txt"]
    assert digest is not None
    return task.id, digest


def test_http_retention_holds_and_deletion(actors: Actors) -> None:
    admin, agent = actors.client("admin"), actors.client("agent")
    task_id, digest = _published_secret(actors)
    with pytest.raises(NotAuthorized):
        agent.set_retention({"candidates": 60.0})
    assert admin.set_retention({"candidates": 60.0}).candidates == 60.0
    assert admin.set_retention({"verifier_logs": None}).candidates == 60.0  # left out: kept
    hold = admin.place_hold("incident 7", task_id)
    with pytest.raises(Conflict) as held:
        admin.delete_bytes(digest, "a leaked password")
    assert held.value.reason == "legal_hold"
    assert admin.release_hold(hold.id, "incident closed").live is False
    stone = admin.delete_bytes(digest, "a leaked password")
    assert stone.paths == ["src/answer.txt"] and "a leaked password" in stone.text

    with pytest.raises(BytesDeleted) as gone:
        agent.get_blob(digest)
    assert gone.value.status == 410 and gone.value.reason == "bytes_deleted"
    assert "a leaked password" in gone.value.detail
    with httpx.Client(base_url=actors.url, transport=actors.transport) as http:
        answer = http.get(
            f"/v1/blobs/{digest}", headers={"Authorization": f"Bearer {actors.tokens['agent']}"}
        )
    assert answer.status_code == 410 and answer.json()["reason"] == "bytes_deleted"
    status = admin.retention()
    assert [t.digest for t in status.deleted] == [digest] and status.holds == []
    assert [r.project_id for r in admin.sweep_retention()] == [actors.world.project_id]
    assert actors.world.coord.verify_audit().ok


def test_cli_admin_commands(actors: Actors) -> None:
    task_id, digest = _published_secret(actors)
    policy = js(
        actors, "admin", "admin", "retention", "set", "--candidates", "3600", "--audit-detail", "7200"
    )
    assert (policy["candidates"], policy["audit_detail"]) == (3600, 7200)
    hold = js(actors, "admin", "admin", "hold", "place", "--task", task_id, "--reason", "review")
    assert (
        "legal_hold"
        in cli(actors, "admin", "admin", "delete-bytes", digest, "--reason", "leak", code=1).output
    )
    cli(actors, "admin", "admin", "hold", "release", hold["id"], "--reason", "done")
    out = cli(actors, "admin", "admin", "delete-bytes", digest, "--reason", "leak").stdout
    assert "bytes deleted" in out and "leak" in out
    shown = json.loads(cli(actors, "admin", "admin", "retention", "show", "--json").stdout)
    assert shown["deleted"][0]["digest"] == digest
    assert cli(actors, "agent", "artifact", "cat", "src/answer.txt").stdout == ""  # deleted going forward
    before = str(actors.client("agent").revision("src/answer.txt") - 1)
    refused = cli(actors, "agent", "artifact", "cat", "src/answer.txt", "--revision", before, code=3).output
    assert "bytes_deleted" in refused and "leak" in refused
    swept = js(actors, "admin", "admin", "retention", "sweep")
    assert [r["project_id"] for r in swept] == [actors.world.project_id]
    url = actors.world.coord.store.url  # the operator's command, on the ledger itself
    report = runner.invoke(app, ["audit", "verify", "--database-url", url, "--json"])
    assert report.exit_code == 0 and json.loads(report.stdout)["ok"] is True


def test_every_face_says_the_bytes_were_deleted(
    actors: Actors,
    web: TestClient,  # noqa: F811 - the fixture imported above
) -> None:
    """The task view (HTTP, CLI, dashboard): the receipts and the completion receipt are still
    there and still verify; "still current" says why it cannot be answered."""
    admin = actors.client("admin")
    task_id, digest = _published_secret(actors)
    admin.delete_bytes(digest, "a leaked password")
    view = actors.client("agent").task(task_id)
    assert view.task.still_current is False
    assert view.task.bytes_deleted is not None and view.task.bytes_deleted.startswith("bytes deleted ")
    assert view.task.bytes_deleted.endswith("a leaked password")
    assert [d.digest for d in view.deleted] == [digest] and view.receipts and view.completion is not None
    jwks = actors.world.coord.jwks()["keys"]
    assert any(verify_signature(k["x"], view.completion.receipt, view.completion.signature) for k in jwks)

    shown = cli(actors, "agent", "task", "show", task_id).stdout
    assert "re-verification impossible" in shown and "a leaked password" in shown

    # A receipt read says so itself (GET /v1/receipts/{id}, a candidate's receipts, the CLI);
    # its signature still verifies over the body it signed.
    agent = actors.client("agent")
    for r in [agent.receipt(view.receipts[0].id), *agent.receipts(view.receipts[0].candidate_id)]:
        assert r.bytes_deleted is not None and "a leaked password" in r.bytes_deleted
        assert "cannot be checked again" in r.bytes_deleted and r.deleted_digests == [digest]
        assert verify_signature(public_key_text(actors.world.verifier_key), r.body, r.signature)
    listed = cli(actors, "agent", "receipts", view.receipts[0].candidate_id).stdout
    assert "bytes deleted" in listed and "a leaked password" in listed

    sign_in(web, actors.tokens["agent"])
    page = web.get(f"/ui/tasks/{task_id}").text
    assert "Bytes deleted" in page and "cannot be answered: bytes deleted" in page
    assert "a leaked password" in page
