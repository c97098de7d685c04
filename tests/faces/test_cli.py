"""The CLI through CliRunner, in-process over the HTTP app (and a real socket for config)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from studiolo.core.model import FileMode
from studiolo.faces.cli import CliState, app
from studiolo.faces.cli.docs import command_paths
from studiolo.settings import ClientSettings
from tests.faces.helpers import Actors, new_task, submit, verify
from tests.world import World

runner = CliRunner()
_STATE: list[Path] = []  # the CLI's state directory (remembered claims), per test


@pytest.fixture(autouse=True)
def _cli_state(tmp_path: Path) -> Iterator[None]:
    _STATE[:] = [tmp_path / "cli-state"]
    yield
    _STATE.clear()


def cli(actors: Actors, who: str, *args: str, code: int = 0) -> Result:
    settings = ClientSettings(
        url=actors.url, token=actors.tokens[who], project=actors.world.project_id, state_dir=_STATE[0]
    )
    result = runner.invoke(app, list(args), obj=CliState(settings, actors.transport))
    assert result.exit_code == code, (args, result.output, result.exception)
    return result


def js(actors: Actors, who: str, *args: str, code: int = 0) -> Any:
    return json.loads(cli(actors, who, *args, "--json", code=code).stdout)


@pytest.mark.parametrize("path", command_paths(app), ids=" ".join)
def test_every_command_has_help(path: tuple[str, ...]) -> None:
    result = runner.invoke(app, [*path, "--help"])
    assert result.exit_code == 0 and "Usage" in result.output


def test_whoami_orient_and_admin_commands(actors: Actors, world: World, tmp_path: Path) -> None:
    assert js(actors, "agent", "whoami")["id"] == world.agent.id
    assert "agent-a" in cli(actors, "agent", "whoami").stdout
    assert js(actors, "agent", "orient")["policy"]["version"] == 1
    assert "your grants" in cli(actors, "agent", "orient").stdout
    other = js(actors, "admin", "project", "create", "second")
    assert {p["name"] for p in js(actors, "admin", "project", "list")} == {"demo", "second"}
    assert "second" in cli(actors, "admin", "project", "list").stdout
    added = js(actors, "admin", "principal", "add", "bot", "--kind", "agent")
    assert (
        added["token"].startswith("stl_")
        and "shown once" in cli(actors, "admin", "principal", "add", "bot2").stdout
    )
    pid = added["principal"]["id"]
    assert pid in {p["id"] for p in js(actors, "admin", "principal", "list")}
    assert js(actors, "admin", "principal", "rotate-token", pid)["token"] != added["token"]
    assert js(actors, "admin", "principal", "revoke-tokens", pid) == {"revoked": 1}
    key = world.verifier.public_key or ""
    # a base64url key may start with "-" (1 in 64): after "--" it is never read as an option
    set_key = cli(actors, "admin", "principal", "set-key", "--json", "--", world.verifier.id, key)
    assert json.loads(set_key.stdout)["public_key"] == key
    g = js(actors, "admin", "grant", "add", pid, "--actions", "read,claim", "--scope", "src/**")
    assert g["actions"] == ["claim", "read"] and g["scope"] == ["src/**"]
    assert "principal_id" in cli(actors, "admin", "grant", "list").stdout
    assert g["id"] in {x["id"] for x in js(actors, "admin", "grant", "list")}
    assert js(actors, "admin", "grant", "revoke", g["id"])["live"] is False
    policy = tmp_path / "policy.md"
    policy.write_text("new rules\n")
    assert js(actors, "admin", "policy", "publish", "--file", str(policy))["version"] == 2
    assert "published policy v3" in cli(actors, "admin", "policy", "publish", "--text", "v3").stdout
    assert [p["version"] for p in js(actors, "admin", "policy", "list")] == [1, 2, 3]
    c = js(
        actors, "admin", "checker", "add", "lint@2", "--verifier", world.verifier.id, "--argv", "ruff check"
    )
    assert c["config"] == {"argv": ["ruff", "check"]}
    assert {x["ref"] for x in js(actors, "admin", "checker", "list")} == {"unit@1", "lint@2"}
    assert other["id"].startswith("prj_")


def test_blob_gc_over_http(actors: Actors, world: World) -> None:
    """`studiolo blob gc` → `POST /v1/blobs/collect` → the door (service admins, audited)."""
    old = actors.client("agent").put_blob(b"staged, never used").digest
    world.edit("docs/kept.md", b"kept")
    world.clock.advance(7200)
    young = actors.client("agent").put_blob(b"staged just now").digest
    refused = cli(actors, "agent", "blob", "gc", code=3)
    assert "not_authorized" in refused.output
    assert js(actors, "admin", "blob", "gc") == {"collected": 1}
    assert "collected 0 blob(s)" in cli(actors, "admin", "blob", "gc").stdout
    assert cli(actors, "admin", "blob", "gc", "--older-than", "-1", code=2)
    for digest, there in ((old, False), (young, True)):
        assert (world.coord.store.read(lambda tx, d=digest: tx.content.blob(d)) is not None) is there
    world.clock.advance(1)
    assert actors.client("admin").collect_garbage(older_than_seconds=0) == 1  # the young one
    kinds = [e.kind for e in world.coord.store.read(lambda tx: list(tx.audit.iter_all()))]
    assert kinds.count("blobs.collected") == 3


def test_task_commands(actors: Actors, world: World) -> None:
    t = js(actors, "admin", "task", "create", "Double it", "--criterion", "tests=unit@1", "--scope", "src/**")
    assert (
        "created"
        in cli(
            actors, "admin", "task", "create", "Other", "--criterion", "tests=unit@1", "--scope", "src/**"
        ).stdout
    )
    assert {x["title"] for x in js(actors, "agent", "task", "list", "--status", "open")} == {
        "Double it",
        "Other",
    }
    assert "Double it" in cli(actors, "agent", "task", "list").stdout
    assert js(actors, "agent", "task", "show", t["id"])["task"]["fact"] == "open"
    assert "fact open" in cli(actors, "agent", "task", "show", t["id"]).stdout
    moved = js(actors, "admin", "task", "migrate", t["id"], "--scope", "src/**", "--scope", "docs/**")
    assert moved["contract_hash"] != t["contract_hash"]
    a = js(actors, "agent", "claim", t["id"], "--lease", "60")
    assert a["fence"] == 1 and "lease until" in cli(actors, "agent", "heartbeat", a["id"]).stdout
    assert js(actors, "agent", "heartbeat", a["id"], "--lease", "90")["lease_deadline"] == world.clock() + 90
    h = js(actors, "agent", "handoff", a["id"], "--artifact", "src/input.txt=1", "--obligation", "check it")
    assert h["artifacts"] == {"src/input.txt": 1}
    assert js(actors, "agent", "release", a["id"])["status"] == "released"
    r = js(actors, "admin", "task", "reassign", t["id"], world.agent2.id)
    assert r["principal_id"] == world.agent2.id and r["fence"] == 2
    assert (
        js(actors, "admin", "task", "cancel", t["id"], "--reason", "done elsewhere")["status"] == "cancelled"
    )
    assert "cancelled" in cli(actors, "admin", "task", "cancel", t["id"], code=1).stderr


def test_checkout_submit_verify_complete(actors: Actors, world: World, tmp_path: Path) -> None:
    task = new_task(actors.client("admin"))
    attempt = js(actors, "agent", "claim", task.id)
    work = tmp_path / "work"
    manifest = js(actors, "agent", "checkout", str(work), "--prefix", "src")
    assert set(manifest["files"]) == {"src/input.txt", "src/answer.txt"}
    (work / "src" / "answer.txt").write_text("42\n")
    (work / "src" / "notes.txt").write_text("new\n")
    cand = js(actors, "agent", "submit", attempt["id"], str(work))
    assert cand["bases"] == {"src/answer.txt": 1, "src/notes.txt": 0}
    assert cand["file_deps"] == {"src/input.txt": 1}
    queue = js(actors, "verifier", "verifications")
    assert [q["candidate_id"] for q in queue] == [cand["id"]]
    assert "candidate_id" in cli(actors, "verifier", "verifications").stdout
    key = tmp_path / "ci.pem"
    key.write_bytes(_pem(world))
    receipt = js(
        actors,
        "verifier",
        "receipt",
        "sign",
        cand["id"],
        "--criterion",
        "tests",
        "--result",
        "pass",
        "--key-file",
        str(key),
    )
    assert receipt["body"]["result"] == "pass"
    assert [r["id"] for r in js(actors, "agent", "receipts", cand["id"])] == [receipt["id"]]
    assert "tests via unit@1: pass" in cli(actors, "agent", "receipts", cand["id"]).stdout
    done = js(actors, "agent", "complete", task.id, "--candidate", cand["id"])
    assert done["replay"] is False and done["completion"]["revisions"] == {
        "src/answer.txt": 2,
        "src/notes.txt": 1,
    }
    again = cli(actors, "agent", "complete", task.id, "--candidate", cand["id"])
    assert "idempotent replay" in again.stdout


def test_a_rejection_exits_1_with_every_failed_predicate(actors: Actors, world: World) -> None:
    admin, agent = actors.client("admin"), actors.client("agent")
    task = new_task(admin)
    attempt = agent.attempt(js(actors, "agent", "claim", task.id)["id"])
    cand = submit(agent, attempt, {"src/answer.txt": b"42\n"}, ("src/input.txt",))
    verify(actors.client("verifier"), world, cand, "fail")
    problem = js(actors, "agent", "complete", task.id, "--candidate", cand.id, code=1)
    assert (problem["status"], problem["reason"], problem["failed"]) == (
        409,
        "evidence_failed",
        ["evidence_failed"],
    )
    (detail,) = problem["details"]
    assert detail["reason"] == "evidence_failed" and detail["items"][0]["issuer_name"] == "ci"
    human = cli(actors, "agent", "complete", task.id, "--candidate", cand.id, "--request-id", "x", code=1)
    assert "evidence_failed" in human.stderr
    assert "evidence_failed: Criterion tests failed: receipt rcp_" in human.stderr  # the detail, in words


def test_complete_sends_the_contract_the_attempt_was_claimed_under(actors: Actors, world: World) -> None:
    admin, agent = actors.client("admin"), actors.client("agent")
    task = new_task(admin)
    attempt_id = js(actors, "agent", "claim", task.id)["id"]
    attempt = agent.attempt(attempt_id)
    cand = submit(agent, attempt, {"src/answer.txt": b"42\n"}, ("src/input.txt",))
    admin.migrate(task.id, scope=["src/**", "docs/**"])  # the contract changes after the claim
    verify(actors.client("verifier"), world, cand)  # signed under the task's new contract
    problem = js(actors, "agent", "complete", task.id, "--candidate", cand.id, code=1)
    assert (problem["reason"], problem["failed"]) == ("contract_mismatch", ["contract_mismatch"])
    current = agent.task(task.id).task.contract_hash
    done = js(actors, "agent", "complete", task.id, "--candidate", cand.id, "--contract-hash", current)
    assert done["replay"] is False


def test_complete_of_an_attempt_claimed_elsewhere_needs_the_contract(actors: Actors) -> None:
    admin, agent = actors.client("admin"), actors.client("agent")
    task = new_task(admin)
    attempt = agent.claim(task.id)  # not through this CLI: nothing remembered
    cand = submit(agent, attempt, {"src/answer.txt": b"42\n"}, ("src/input.txt",))
    problem = js(actors, "agent", "complete", task.id, "--candidate", cand.id, code=2)
    assert problem["reason"] == "invalid_request" and "--contract-hash" in problem["detail"]


def test_exit_codes(actors: Actors) -> None:
    assert js(actors, "agent", "task", "show", "tsk_missing1", code=3)["reason"] == "task_not_found"
    assert "invalid_request" in cli(actors, "agent", "task", "show", "bad", code=2).stderr
    cli(actors, "agent", "task", "create", "x", "--criterion", "nope", "--scope", "a", code=2)
    actors.tokens["nobody"] = "stl_nobody"
    assert js(actors, "nobody", "whoami", code=3)["reason"] == "unauthenticated"
    unreachable = CliState(ClientSettings(url="http://127.0.0.1:9", token="t"))
    result = runner.invoke(app, ["whoami"], obj=unreachable)
    assert result.exit_code == 4 and "cannot reach" in result.stderr


def test_artifact_observe_and_events(actors: Actors, tmp_path: Path) -> None:
    assert {a["path"] for a in js(actors, "human", "artifact", "list", "--prefix", "src")} == {
        "src/input.txt",
        "src/answer.txt",
    }
    assert js(actors, "human", "artifact", "show", "src/input.txt")["revision"] == 1
    assert cli(actors, "human", "artifact", "cat", "src/input.txt").stdout == "21\n"
    new = tmp_path / "guide.md"
    new.write_text("# guide\n")
    assert js(actors, "human", "artifact", "put", "docs/guide.md", "--file", str(new))["revision"] == 1
    assert "revision 2" in cli(actors, "human", "artifact", "put", "docs/guide.md", "--delete").stdout
    cli(
        actors,
        "human",
        "artifact",
        "put",
        "docs/guide.md",
        "--file",
        str(new),
        "--base-revision",
        "0",
        code=1,
    )
    assert (
        js(actors, "human", "observe", "src/input.txt", "deployed", "--revision", "1")["kind"] == "deployed"
    )
    current = js(actors, "human", "artifact", "show", "src/answer.txt")
    assert js(actors, "human", "observe", "src/answer.txt", "healthy")["revision"] == current["revision"]
    digest = js(actors, "human", "artifact", "show", "src/input.txt")["digest"]
    assert js(actors, "human", "observe", "src/input.txt", "deployed", "--digest", digest)["digest"] == digest
    assert "no revision 0" in cli(actors, "human", "observe", "src/never.txt", "deployed", code=2).output
    page = js(actors, "human", "events", "--limit", "1000")
    assert page[-1]["kind"] == "observation.recorded"
    assert "observation.recorded" in cli(actors, "human", "events", "--after", str(page[-2]["seq"])).stdout
    followed = cli(
        actors, "human", "events", "--follow", "--timeout", "0.3", "--after", str(page[-2]["seq"]), "--json"
    )
    assert json.loads(followed.stdout.splitlines()[-1])["seq"] == page[-1]["seq"]


def test_config_from_env_and_file(live: Actors, tmp_path: Path) -> None:
    env = {
        "STUDIOLO_URL": live.url,
        "STUDIOLO_TOKEN": live.tokens["agent"],
        "STUDIOLO_CONFIG": "/nonexistent",
    }
    result = runner.invoke(app, ["whoami", "--json"], env=env)
    assert result.exit_code == 0 and json.loads(result.stdout)["id"] == live.world.agent.id
    config = tmp_path / "config.toml"
    config.write_text(f'url = "{live.url}"\ntoken = "{live.tokens["agent2"]}"\n')
    result = runner.invoke(
        app,
        ["whoami", "--json"],
        env={"STUDIOLO_CONFIG": str(config), "STUDIOLO_URL": "", "STUDIOLO_TOKEN": ""},
    )
    assert json.loads(result.stdout)["id"] == live.world.agent2.id
    flags = ["--url", live.url, "--token", live.tokens["human"], "whoami", "--json"]
    result = runner.invoke(app, flags, env={"STUDIOLO_CONFIG": str(config)})
    assert json.loads(result.stdout)["id"] == live.world.human.id


def test_local_init_audit_and_demo(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    first = runner.invoke(app, ["init", "--database-url", url, "--json"])
    assert first.exit_code == 0 and json.loads(first.stdout)["admin_token"].startswith("stl_")
    again = runner.invoke(app, ["init", "--database-url", url, "--json"])
    assert json.loads(again.stdout) == {"initialized": False}
    report = runner.invoke(app, ["audit", "verify", "--database-url", url, "--json"])
    assert report.exit_code == 0 and json.loads(report.stdout)["ok"] is True
    assert "ok" in runner.invoke(app, ["audit", "verify", "--database-url", url]).stdout
    demo = runner.invoke(app, ["demo"])
    assert demo.exit_code == 0 and "evidence_untrusted" in demo.stdout and "✗" not in demo.stdout


def test_serve_and_run_prepare_then_serve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    served: list[Any] = []
    monkeypatch.setattr(
        "studiolo.faces.http.server.serve", lambda coord, settings, workers=1: served.append(settings)
    )
    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / 'served.db'}"
    out = runner.invoke(app, ["serve", "--database-url", url, "--port", "9999"])
    assert out.exit_code == 0 and "admin token (shown once)" in out.stdout and served[-1].port == 9999
    ran = runner.invoke(app, ["run", "--port", "9998"])
    assert ran.exit_code == 0, ran.output
    saved = json.loads((tmp_path / ".studiolo" / "demo-tokens.json").read_text())
    assert set(saved["principals"]) == {"agent-a", "agent-b", "ci", "editor", "requester"}
    assert saved["url"] == "http://127.0.0.1:9998" and saved["admin"] in ran.stdout
    assert (tmp_path / ".studiolo" / "demo-tokens.json").stat().st_mode & 0o777 == 0o600
    rerun = runner.invoke(app, ["run", "--port", "9998"])
    assert (
        rerun.exit_code == 0
        and json.loads((tmp_path / ".studiolo" / "demo-tokens.json").read_text()) == saved
    )


def _pem(world: World) -> bytes:
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

    return world.verifier_key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())


def test_a2a_intake_put_and_list(actors: Actors, world: World) -> None:
    put = js(
        actors, "admin", "a2a", "intake", "put", "fix",
        "--criterion", "tests=unit@1", "--scope", "src/**", "--scope", "docs/**",
        "--description", "fix code", "--policy-version", "1",
    )  # fmt: skip
    assert put == {
        "skill": f"{world.project_id}/fix",
        "name": "fix",
        "description": "fix code",
        "criteria": {"tests": "unit@1"},
        "scope": ["src/**", "docs/**"],
        "policy_version": 1,
    }
    listed = cli(actors, "admin", "a2a", "intake", "list").stdout
    assert f"{world.project_id}/fix: tests=unit@1 · scope src/** docs/** · policy v1" in listed
    assert [t["name"] for t in js(actors, "admin", "a2a", "intake", "list")] == ["fix"]
    refused = cli(
        actors, "agent", "a2a", "intake", "put", "x", "--criterion", "t=unit@1", "--scope", "**", code=3
    )
    assert "not_authorized" in refused.output
    bad = cli(actors, "admin", "a2a", "intake", "put", "x", "--criterion", "unit", "--scope", "**", code=2)
    assert "NAME=CHECKER@VERSION" in bad.output
    unknown = cli(
        actors, "admin", "a2a", "intake", "put", "x", "--criterion", "t=nope@9", "--scope", "**", code=2
    )
    assert "invalid_request" in unknown.output or "nope@9" in unknown.output


# (the command, the request model it sends, the model's fields spelled otherwise by the CLI)
_SENDS = [
    (("task", "create"), "TaskIn", {"criteria": "criterion"}),
    (("task", "migrate"), "MigrateIn", {"criteria": "criterion"}),
    (("task", "cancel"), "CancelIn", {}),
    (("task", "reassign"), "ReassignIn", {"lease_seconds": "lease"}),
    (("claim",), "ClaimIn", {"lease_seconds": "lease"}),
    (("heartbeat",), "LeaseIn", {"lease_seconds": "lease"}),
    (("handoff",), "HandoffIn", {"artifacts": "artifact", "obligations": "obligation"}),
    (("observe",), "ObservationIn", {}),
    (("principal", "add"), "PrincipalIn", {}),
]


@pytest.mark.parametrize(("path", "model", "spelled"), _SENDS, ids=[" ".join(p) for p, _, _ in _SENDS])
def test_a_command_offers_every_field_of_the_request_it_sends(
    path: tuple[str, ...], model: str, spelled: dict[str, str]
) -> None:
    """The CLI sends the wire models: each field is a parameter of the command that sends it
    (`task create` lacked `allow_evidence_reuse`, `task migrate` `separate_verdict`)."""
    import click
    import typer.main

    from studiolo.api import requests as q

    ctx = click.Context(typer.main.get_command(app), info_name="studiolo")
    for word in path:
        command = ctx.command.get_command(ctx, word)  # type: ignore[attr-defined]
        ctx = click.Context(command, info_name=word, parent=ctx)
    names = {p.name for p in ctx.command.params}
    assert {spelled.get(f, f) for f in getattr(q, model).model_fields} <= names


def test_task_create_with_evidence_reuse_and_separate_verdicts(actors: Actors) -> None:
    args = ["task", "create", "Reuse", "--criterion", "tests=unit@1", "--scope", "src/**"]
    plain = js(actors, "admin", *args)
    t = js(actors, "admin", *args, "--allow-evidence-reuse", "--separate-verdict", "tests")
    assert (t["contract"]["allow_evidence_reuse"], plain["contract"]["allow_evidence_reuse"]) == (True, False)
    assert (t["contract"]["separate_verdict"], plain["contract"]["separate_verdict"]) == (["tests"], [])
    assert t["contract_hash"] != plain["contract_hash"]
    moved = js(actors, "admin", "task", "migrate", plain["id"], "--separate-verdict", "tests")
    assert moved["contract"]["separate_verdict"] == ["tests"]
    kept = js(actors, "admin", "task", "migrate", plain["id"], "--scope", "docs/**")
    assert (kept["contract"]["separate_verdict"], kept["contract"]["scope"]) == (["tests"], ["docs/**"])


def test_a_plain_checkout_keeps_exec_bits_and_submit_sends_them(
    actors: Actors, world: World, tmp_path: Path
) -> None:
    """`checkout` writes an executable artifact with its execute bits; `submit` sends each
    written file's mode, and a changed bit alone (chmod, the same bytes) is a change."""
    run = world.put(b"#!/bin/sh\necho hi\n")
    world.coord.edit_artifact(world.human, world.project_id, "src/run.sh", run, 0, FileMode.EXECUTABLE)
    task = new_task(actors.client("admin"))
    attempt = js(actors, "agent", "claim", task.id)
    work = tmp_path / "work"
    manifest = js(actors, "agent", "checkout", str(work), "--prefix", "src")
    assert manifest["files"]["src/run.sh"]["mode"] == "executable"
    assert (work / "src" / "run.sh").stat().st_mode & 0o100
    assert not (work / "src" / "input.txt").stat().st_mode & 0o111
    (work / "src" / "run.sh").write_text("#!/bin/sh\necho bye\n")  # an edit keeps the bit
    (work / "src" / "input.txt").chmod(0o755)  # the bit alone
    cand = js(actors, "agent", "submit", attempt["id"], str(work))
    assert set(cand["files"]) == {"src/run.sh", "src/input.txt"}
    assert cand["modes"] == {"src/run.sh": "executable", "src/input.txt": "executable"}
