"""The dashboard's delegations page: the review queue of indeterminate delegations, and an
operator's decision through the page's form (CSRF-checked, audited like the API's)."""

from __future__ import annotations

from starlette.testclient import TestClient

from studiolo.core.quiescence import TaskState
from studiolo.core.remote import RemoteFile, RemoteResult, RemoteState
from studiolo.keys import ServiceKey
from tests.faces.web.conftest import sign_in
from tests.world import World

KEY = ServiceKey.generate()


def _indeterminate(world: World) -> str:
    c, w = world.coord, world
    c.add_remote_org(w.admin, w.project_id, "acme", {"k1": KEY.public})
    task = w.new_task("attest", criteria={"ok": "a2a-acme@1"}, scope=["remote/**"])
    kw = {"agent_url": "http://acme.test", "card_digest": "sha256:" + "0" * 64, "card_kid": "k1"}
    d = c.delegate_remote(w.admin, task.id, "acme", **kw)
    c.remote_sent(d.id, "remote-1", "TASK_STATE_WORKING")
    c.remote_terminal(d.id, TaskState.COMPLETED)
    partial = RemoteResult(
        TaskState.COMPLETED, b"{}", (RemoteFile("a", "out.txt", b"ok"),), ("bundle",), "k1"
    )
    c.remote_indeterminate(d.id, "missing_artifacts", partial)
    return d.id


def test_an_operator_finalizes_from_the_review_queue(
    web: TestClient, world: World, tokens: dict[str, str]
) -> None:
    dlg = _indeterminate(world)
    csrf = sign_in(web, tokens["admin"])
    page = web.get(f"/ui/projects/{world.project_id}/delegations")
    assert page.status_code == 200 and "missing_artifacts" in page.text and "<code>bundle</code>" in page.text
    refused = web.post(f"/ui/delegations/{dlg}/review", data={"csrf": "forged", "decision": "finalize"})
    assert refused.status_code == 403
    assert world.coord.remote_state(dlg).state is RemoteState.INDETERMINATE
    done = web.post(
        f"/ui/delegations/{dlg}/review",
        data={"csrf": csrf, "decision": "finalize", "note": "confirmed by phone"},
        follow_redirects=False,
    )
    assert done.status_code == 303, done.text
    assert world.coord.remote_state(dlg).state is RemoteState.FINALIZED
    after = web.get(f"/ui/projects/{world.project_id}/delegations").text
    assert "Nothing waits for an operator." in after and "finalized" in after
    task_id = world.coord.remote_state(dlg).task_id  # its timeline shows the service's own events
    assert web.get(f"/ui/tasks/{task_id}").status_code == 200


def test_a_reader_sees_the_queue_without_the_forms(
    web: TestClient, world: World, tokens: dict[str, str]
) -> None:
    _indeterminate(world)
    sign_in(web, tokens["agent"])
    page = web.get(f"/ui/projects/{world.project_id}/delegations")
    assert page.status_code == 200 and "missing_artifacts" in page.text
    assert "/review" not in page.text
