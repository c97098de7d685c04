"""The MCP server with the SDK's in-memory client, over the door in this process (the
injectable clock moves leases): the two-agent session, schemas, resources, the prompt,
refusal hints and the workspace's confinement."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from studiolo.client import Client as HttpClient
from studiolo.core.model import FileMode, Principal
from studiolo.faces.http.server import free_port
from studiolo.faces.mcp.guide import PROMPT_NAME
from studiolo.faces.mcp.inprocess import InProcessPort
from studiolo.faces.mcp.remote import RemotePort
from studiolo.faces.mcp.server import build_server
from studiolo.faces.mcp.tools import TOOL_NAMES, WORKSPACE_TOOL_NAMES
from tests.faces.mcp.session import Agent, check_schemas, two_agent_session
from tests.world import World


def _client(world: World, who: Principal, workdir: Path | None) -> Client:
    if workdir is not None:
        workdir.mkdir(exist_ok=True)
    return Client(build_server(lambda _ctx: InProcessPort(world.coord, who), workspace=workdir))


def _run(world: World, tmp_path: Path, body: Callable[[Agent, Agent], Awaitable[None]]) -> None:
    async def main() -> None:
        wa, wb = tmp_path / "ws-a", tmp_path / "ws-b"
        async with _client(world, world.agent, wa) as ca, _client(world, world.agent2, wb) as cb:
            await body(Agent(ca, wa), Agent(cb, wb))

    anyio.run(main)


def test_two_agent_session_and_every_output_matches_its_schema(world: World, tmp_path: Path) -> None:
    async def body(a: Agent, b: Agent) -> None:
        await two_agent_session(world, a, b)
        called = await check_schemas(a, b)
        assert called == set(TOOL_NAMES) | set(WORKSPACE_TOOL_NAMES)

    _run(world, tmp_path, body)


def test_tools_resources_and_prompt_are_listed(world: World, tmp_path: Path) -> None:
    task = world.new_task()

    async def body(a: Agent, b: Agent) -> None:
        names = [t.name for t in (await a.client.list_tools()).tools]
        assert names == [*TOOL_NAMES, *WORKSPACE_TOOL_NAMES]
        templates = {t.uri_template for t in (await a.client.list_resource_templates()).resource_templates}
        assert templates == {"studiolo://projects/{project_id}/policy", "studiolo://tasks/{task_id}/contract"}
        policy = await a.client.read_resource(f"studiolo://projects/{world.project_id}/policy")
        assert policy.contents[0].text == "Be careful. Write tests."  # type: ignore[union-attr]
        contract = await a.client.read_resource(f"studiolo://tasks/{task.id}/contract")
        assert task.contract_hash in contract.contents[0].text  # type: ignore[union-attr]
        prompt = await a.client.get_prompt(PROMPT_NAME, {"task_id": task.id})
        assert task.id in prompt.messages[0].content.text  # type: ignore[union-attr]

    _run(world, tmp_path, body)


def test_an_unknown_task_is_a_protocol_error_for_a_resource_and_a_refusal_for_a_tool(
    world: World, tmp_path: Path
) -> None:
    async def body(a: Agent, b: Agent) -> None:
        with pytest.raises(MCPError) as missing:
            await a.client.read_resource("studiolo://tasks/tsk_missing000/contract")
        assert missing.value.code == -32602 and "task_not_found" in missing.value.message
        for uri in ("studiolo://tasks/tsk_nope/contract", "studiolo://tasks/x%00y/contract"):
            with pytest.raises(MCPError) as malformed:  # a malformed id names no resource either
                await a.client.read_resource(uri)
            assert malformed.value.code == -32602, (uri, malformed.value)
        refused = await a.refused("get_task", task_id="tsk_missing000")
        assert refused["reason"] == "task_not_found" and "read grant" in refused["hints"][0]["hint"]
        bad = await a.call("get_task")  # a missing argument: the SDK's own error, no refusal body
        assert bad.is_error and bad.structured_content is None

    _run(world, tmp_path, body)


def test_checkout_stays_inside_the_working_directory(world: World, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()

    async def body(a: Agent, b: Agent) -> None:
        assert a.workdir is not None
        for directory in ("../outside", "/tmp", "work/.git", "work/.GIT/x", "a\\b"):
            refused = await a.refused("checkout", directory=directory)
            assert refused["reason"] == "invalid_path", (directory, refused)
        os.symlink(outside, a.workdir / "link")
        refused = await a.refused("checkout", directory="link")
        assert refused["reason"] == "invalid_path"
        out = await a.ok("checkout", directory="work/here")
        assert (a.workdir / "work" / "here" / "src" / "input.txt").read_bytes() == b"21\n"
        assert out["manifest"] == "work/here/.studiolo-checkout.json"
        nothing = await a.refused("submit_workspace", attempt_id="att_whatever0", directory="work/here")
        assert nothing["reason"] == "invalid_request"

    _run(world, tmp_path, body)
    assert list(outside.iterdir()) == []


def test_an_unreachable_service_is_a_refusal_with_a_hint() -> None:
    port = RemotePort(HttpClient(f"http://127.0.0.1:{free_port()}", "stl_nobody", timeout=5))

    async def main() -> None:
        async with Client(build_server(lambda _ctx: port)) as c:
            refused = await Agent(c).refused("orient")
            assert refused["reason"] == "unreachable" and "STUDIOLO_URL" in refused["hints"][0]["hint"]

    anyio.run(main)
    port.close()


def test_submit_workspace_derives_new_paths_deletions_and_reads(world: World, tmp_path: Path) -> None:
    task = world.new_task()
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the server\n")

    async def body(a: Agent, b: Agent) -> None:
        assert a.workdir is not None
        attempt = (await a.ok("claim_task", task_id=task.id))["attempt"]["id"]
        await a.ok("checkout", directory="w", prefix="src/")
        work = a.workdir / "w"
        (work / "src" / "new.txt").write_text("new\n")
        (work / "src" / "input.txt").unlink()
        os.symlink(secret, work / "src" / "link.txt")  # never read, never uploaded
        (work / ".git").mkdir()
        (work / ".git" / "config").write_text("[core]\n")
        out = await a.ok("submit_workspace", attempt_id=attempt, directory="w", declare_collection=True)
        cand = out["candidate"]
        assert out["uploaded"] == ["src/new.txt"] and out["deleted"] == ["src/input.txt"]
        assert cand["bases"] == {"src/new.txt": 0, "src/input.txt": 1}
        assert cand["file_deps"] == {"src/answer.txt": 1} and cand["collection_deps"] == {"src/": 2}
        (work / ".studiolo-checkout.json").write_text('{"files": 3}')
        broken = await a.refused("submit_workspace", attempt_id=attempt, directory="w")
        assert broken["reason"] == "invalid_request" and "manifest" in broken["detail"]

    _run(world, tmp_path, body)


def test_checkout_and_submit_workspace_carry_exec_bits(world: World, tmp_path: Path) -> None:
    """An executable artifact is checked out executable; a chmod alone is a change, and the
    candidate names the written files' modes."""
    run = world.put(b"#!/bin/sh\n")
    world.coord.edit_artifact(world.human, world.project_id, "src/run.sh", run, 0, FileMode.EXECUTABLE)
    task = world.new_task()

    async def body(a: Agent, b: Agent) -> None:
        assert a.workdir is not None
        attempt = (await a.ok("claim_task", task_id=task.id))["attempt"]["id"]
        await a.ok("checkout", directory="w", prefix="src/")
        work = a.workdir / "w"
        assert (work / "src" / "run.sh").stat().st_mode & 0o100
        (work / "src" / "input.txt").chmod(0o755)  # the bytes unchanged
        (work / "src" / "run.sh").write_text("#!/bin/sh\nexit 0\n")  # an edit keeps the bit
        out = await a.ok("submit_workspace", attempt_id=attempt, directory="w")
        assert out["uploaded"] == ["src/input.txt", "src/run.sh"]
        assert out["candidate"]["modes"] == {"src/input.txt": "executable", "src/run.sh": "executable"}

    _run(world, tmp_path, body)


def test_no_handoff_is_a_normal_answer_an_unknown_task_a_refusal(world: World, tmp_path: Path) -> None:
    task = world.new_task()

    async def body(a: Agent, b: Agent) -> None:
        none = await a.ok("read_handoff", task_id=task.id)
        assert none == {"task_id": task.id, "handoff": None, "contract_current": None, "artifacts": {}}
        assert (await a.refused("read_handoff", task_id="tsk_missing000"))["reason"] == "task_not_found"
        claimed = await a.ok("claim_task", task_id=task.id)
        await a.ok("leave_handoff", attempt_id=claimed["attempt"]["id"], notes="over to you")
        left = await b.ok("read_handoff", task_id=task.id)
        assert left["handoff"]["notes"] == "over to you" and left["contract_current"] is True
        assert await check_schemas(a, b) >= {"read_handoff"}

    _run(world, tmp_path, body)


def test_list_tasks_pages_with_a_cursor(world: World, tmp_path: Path) -> None:
    made = sorted(world.new_task(f"task {i}").id for i in range(7))  # one creation time: by id

    async def body(a: Agent, b: Agent) -> None:
        first = await a.ok("list_tasks")
        assert first["next_cursor"] is None and [t["id"] for t in first["tasks"]] == made  # < one page
        seen: list[str] = []
        page = await a.ok("list_tasks", limit=3)
        while True:
            seen += [t["id"] for t in page["tasks"]]
            if page["next_cursor"] is None:
                break
            page = await a.ok("list_tasks", limit=3, cursor=page["next_cursor"])
        assert seen == made
        two = await a.ok("list_tasks", limit=3)
        wrong = await a.refused("list_tasks", status="open", cursor=two["next_cursor"])
        assert wrong["reason"] == "invalid_request"
        assert (await a.refused("list_tasks", cursor="%%%"))["reason"] == "invalid_request"
        assert await check_schemas(a) == {"list_tasks"}

    _run(world, tmp_path, body)


def test_checkout_never_overwrites_local_changes_without_being_asked(world: World, tmp_path: Path) -> None:
    world.edit("src/old.txt", b"old\n")

    async def body(a: Agent, b: Agent) -> None:
        assert a.workdir is not None
        await a.ok("checkout", directory="w", prefix="src/")
        work = a.workdir / "w" / "src"
        (work / "answer.txt").write_text("my work\n")  # a local edit
        (work / "extra.txt").write_text("mine\n")  # a local file the server does not have yet
        world.edit("src/input.txt", b"22\n")
        world.edit("src/extra.txt", b"theirs\n")
        world.edit("src/old.txt", None)  # the server deleted it; the local copy is unchanged
        refused = await a.refused("checkout", directory="w", prefix="src/")
        assert refused["reason"] == "invalid_request" and "overwrite=true" in refused["detail"]
        assert "src/answer.txt" in refused["detail"] and "src/extra.txt" in refused["detail"]
        assert (work / "answer.txt").read_text() == "my work\n" and (work / "input.txt").read_text() == "21\n"
        again = await a.ok("checkout", directory="w", prefix="src/", overwrite=True)
        assert again["overwritten"] == ["src/answer.txt", "src/extra.txt"]
        assert (work / "input.txt").read_text() == "22\n" and (work / "extra.txt").read_text() == "theirs\n"
        assert not (work / "old.txt").exists()
        unchanged = await a.ok("checkout", directory="w", prefix="src/")  # nothing local: no refusal
        assert unchanged["overwritten"] == [] and unchanged["files"]["src/input.txt"] == 2

    _run(world, tmp_path, body)


def test_checkout_is_annotated_as_a_local_write_that_may_discard(world: World, tmp_path: Path) -> None:
    async def body(a: Agent, b: Agent) -> None:
        tools = {t.name: t for t in (await a.client.list_tools()).tools}
        hints = tools["checkout"].annotations
        assert hints is not None and hints.destructive_hint is True and hints.idempotent_hint is False
        assert hints.read_only_hint is False

    _run(world, tmp_path, body)


def test_submit_workspace_declares_what_the_session_read(world: World, tmp_path: Path) -> None:
    task = world.new_task()
    spec = world.edit("docs/spec.txt", b"double it\n")
    world.edit("docs/other.txt", b"other\n")
    world.edit("docs/past.txt", b"v1\n")
    world.edit("docs/past.txt", b"v2\n")

    async def body(a: Agent, b: Agent) -> None:
        assert a.workdir is not None
        attempt = (await a.ok("claim_task", task_id=task.id))["attempt"]["id"]
        await a.ok("read_artifact", path="docs/spec.txt")  # outside the checkout's prefix
        await a.ok("read_artifact", path="docs/past.txt", revision=1)  # a past revision: no dependency
        await a.ok("checkout", directory="w", prefix="src/")
        (a.workdir / "w" / "src" / "answer.txt").write_text("42\n")
        out = await a.ok(
            "submit_workspace", attempt_id=attempt, directory="w", file_deps={"docs/other.txt": 1}
        )
        deps = out["candidate"]["file_deps"]
        assert deps == {"src/input.txt": 1, "docs/spec.txt": spec, "docs/other.txt": 1}
        world.edit("docs/spec.txt", b"triple it\n")  # what it read moved: the completion says so
        world.receipt(world.coord.candidate(world.admin, out["candidate"]["id"]))
        stale = await a.refused(
            "complete_task",
            task_id=task.id,
            candidate_id=out["candidate"]["id"],
            contract_hash=task.contract_hash,
        )
        assert stale["reason"] == "dependency_stale"

    _run(world, tmp_path, body)


def test_a_deleted_path_and_an_unfiltered_listing_pass_the_client_s_schema_check(
    world: World, tmp_path: Path
) -> None:
    """`encoding: null` (a deleted path) and `status: null` are valid: the SDK client checks
    every structured result against the listed output schema."""
    world.edit("src/gone.txt", b"x\n")
    world.edit("src/gone.txt", None)
    world.new_task()

    async def body(a: Agent, b: Agent) -> None:
        read = await a.ok("read_artifact", path="src/gone.txt")
        assert read["encoding"] is None and read["content"] is None
        listed = await a.ok("list_tasks", status=None)
        assert listed["tasks"]

    _run(world, tmp_path, body)
