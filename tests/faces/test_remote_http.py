"""The delegation faces in-process: the /v1 routes through the Python client and the CLI
(`remote-org`, `delegate review/finalize/reject`), and the delegate route's order of checks
(the caller's right before any network I/O)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from studiolo._exceptions import InvalidRequest, NotAuthorized, NotFound
from studiolo.core.quiescence import TaskState
from studiolo.core.remote import RemoteFile, RemoteResult
from studiolo.faces.cli import CliState, app
from studiolo.keys import ServiceKey
from studiolo.settings import ClientSettings
from tests.faces.helpers import Actors

KEY = ServiceKey.generate()


def _cli(actors: Actors, tmp_path: Path, *args: str, code: int = 0) -> str:
    settings = ClientSettings(
        url=actors.url, token=actors.tokens["admin"], project=actors.world.project_id, state_dir=tmp_path
    )
    result = CliRunner().invoke(app, list(args), obj=CliState(settings, actors.transport))
    assert result.exit_code == code, (args, result.output, result.exception)
    return result.stdout


def test_orgs_review_queue_and_decisions_over_http_and_cli(actors: Actors, tmp_path: Path) -> None:
    w, c = actors.world, actors.world.coord
    out = json.loads(
        _cli(actors, tmp_path, "remote-org", "add", "acme", "--key", f"k1={KEY.public}", "--json")
    )
    assert out["checker"] == "a2a-acme@1" and out["keys"] == {"k1": KEY.public} and "attest_key" not in out
    assert out["origins"] == []
    origins = ["--origin", "https://Agent.Acme.example", "--origin", "http://10.0.0.5:9000"]
    moved = json.loads(_cli(actors, tmp_path, "remote-org", "origins", "acme", *origins, "--json"))
    assert moved["origins"] == ["https://agent.acme.example:443", "http://10.0.0.5:9000"]
    _cli(actors, tmp_path, "remote-org", "origins", "acme", "--origin", "https://a.example/path", code=2)
    admin = actors.client("admin")
    assert [o.name for o in admin.remote_orgs()] == ["acme"]
    tasks = [w.new_task(f"t{i}", criteria={"ok": "a2a-acme@1"}, scope=["remote/**"]) for i in range(2)]
    kw = {"agent_url": "http://acme.test", "card_digest": "sha256:" + "0" * 64, "card_kid": "k1"}
    ids = [c.delegate_remote(w.admin, t.id, "acme", **kw).id for t in tasks]
    partial = RemoteResult(TaskState.COMPLETED, b"{}", (RemoteFile("a", "out.txt", b"ok"),), ("big",), "k1")
    for dlg in ids:
        c.remote_sent(dlg, f"remote-{dlg}", "TASK_STATE_WORKING")
        c.remote_terminal(dlg, TaskState.COMPLETED)
        c.remote_indeterminate(dlg, "missing_artifacts", partial)
    assert sorted(d.id for d in admin.review_queue()) == sorted(ids)
    assert "indeterminate" in _cli(actors, tmp_path, "delegate", "review")
    done = json.loads(_cli(actors, tmp_path, "delegate", "finalize", ids[0], "--note", "checked", "--json"))
    assert done["state"] == "finalized" and done["completion_id"]
    gone = admin.review(ids[1], "reject", "no bundle")
    assert gone.state == "rejected" and admin.review_queue() == []
    assert [d.id for d in admin.delegations("finalized")] == [ids[0]]
    with pytest.raises(InvalidRequest):
        admin.delegations("bogus")
    assert admin.delegation(ids[1]).reason == "no bundle"
    revoked = json.loads(_cli(actors, tmp_path, "remote-org", "revoke", "acme", "--json"))
    assert revoked["revoked_at"] is not None


def test_the_delegate_route_checks_the_caller_before_fetching(actors: Actors) -> None:
    w = actors.world
    w.coord.add_remote_org(w.admin, w.project_id, "acme", {"k1": KEY.public})
    task = w.new_task("t", criteria={"ok": "a2a-acme@1"}, scope=["remote/**"])
    # An agent without a delegate grant: refused before the URL is ever fetched.
    with pytest.raises(NotAuthorized):
        actors.client("agent").delegate(task.id, "acme", "http://127.0.0.1:9/unreachable")
    with pytest.raises(NotFound):
        actors.client("admin").delegate(task.id, "nobody", "http://127.0.0.1:9/unreachable")
    with pytest.raises(InvalidRequest):  # not an http(s) URL: the request model refuses it
        actors.client("admin").delegate(task.id, "acme", "file:///etc/passwd")
    with pytest.raises(InvalidRequest) as err:  # loopback, not named by acme: nothing is sent
        actors.client("admin").delegate(task.id, "acme", "http://127.0.0.1:9")
    assert "names no origins" in err.value.detail
    actors.client("admin").set_remote_origins("acme", ["http://127.0.0.1:9"])  # named explicitly
    with pytest.raises(InvalidRequest) as err:  # nothing listens on port 9: no card, no delegation
        actors.client("admin").delegate(task.id, "acme", "http://127.0.0.1:9")
    assert "agent card" in err.value.detail
    assert w.coord.remote_delegations(w.admin, w.project_id) == []
