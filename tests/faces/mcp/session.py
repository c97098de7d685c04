"""The scripted two-agent session, through MCP tools alone, over any transport; and the
check that every tool result validated against the schema it declares."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from mcp import Client
from mcp_types import CallToolResult, TextContent

from studiolo.faces.mcp.refusals import REFUSAL_META, Refusal
from tests.world import World


@dataclass
class Agent:
    """One MCP client, recording every tool result it receives."""

    client: Client
    workdir: Path | None = None  # where its `checkout`s land, when the server has a workspace
    calls: list[tuple[str, CallToolResult]] = field(default_factory=list)

    async def call(self, name: str, **args: Any) -> CallToolResult:
        result = await self.client.call_tool(name, args)
        self.calls.append((name, result))
        return result

    async def ok(self, name: str, **args: Any) -> dict[str, Any]:
        result = await self.call(name, **args)
        assert not result.is_error, (name, result.content)
        assert result.structured_content is not None
        return result.structured_content

    async def refused(self, name: str, **args: Any) -> dict[str, Any]:
        """The refusal in `_meta`; its reason, failed predicates and hints are in the text too."""
        result = await self.call(name, **args)
        assert result.is_error, (name, result.structured_content)
        return refusal_of(result)


def refusal_of(result: CallToolResult) -> dict[str, Any]:
    assert result.structured_content is None, result.structured_content  # never fails outputSchema
    body: dict[str, Any] | None = (result.meta or {}).get(REFUSAL_META)
    assert body is not None, result.content
    text = "\n".join(c.text for c in result.content if isinstance(c, TextContent))
    assert f"refused: {body['reason']}" in text and ", ".join(body["failed"]) in text
    assert all(h["hint"] in text for h in body["hints"])
    return body


async def check_schemas(*agents: Agent) -> set[str]:
    """Input and output schemas are valid JSON Schema; every recorded result validates
    against its tool's output schema; a refusal has no structured content and its `_meta`
    validates against `Refusal`'s. Returns the tools called."""
    tools = {t.name: t for t in (await agents[0].client.list_tools()).tools}
    for tool in tools.values():
        Draft202012Validator.check_schema(tool.input_schema)
        assert tool.output_schema is not None, tool.name
        Draft202012Validator.check_schema(tool.output_schema)
    refusal = Draft202012Validator(Refusal.model_json_schema())
    called = set()
    for agent in agents:
        for name, result in agent.calls:
            called.add(name)
            if result.is_error:
                errors = [e.message for e in refusal.iter_errors(refusal_of(result))]
            else:
                schema = Draft202012Validator(tools[name].output_schema or {})
                errors = [e.message for e in schema.iter_errors(result.structured_content)]
            assert not errors, (name, errors)
    return called


async def _submit(
    agent: Agent, attempt_id: str, answer: str, directory: str, *, inline: bool = False
) -> dict[str, Any]:
    """From a checkout when the server has a workspace, else inline with read revisions."""
    if agent.workdir is not None and not inline:
        out = await agent.ok("checkout", directory=directory, prefix="src/")
        assert set(out["files"]) == {"src/input.txt", "src/answer.txt"}
        (agent.workdir / directory / "src" / "answer.txt").write_text(answer)
        sub = await agent.ok("submit_workspace", attempt_id=attempt_id, directory=directory)
        assert sub["uploaded"] == ["src/answer.txt"] and sub["deleted"] == []
        cand: dict[str, Any] = sub["candidate"]
    else:
        read = await agent.ok("read_artifact", path="src/input.txt")
        target = await agent.ok("read_artifact", path="src/answer.txt")
        cand = await agent.ok(
            "submit_candidate",
            attempt_id=attempt_id,
            files={"src/answer.txt": answer},
            bases={"src/answer.txt": target["artifact"]["revision"]},
            file_deps={"src/input.txt": read["artifact"]["revision"]},
        )
    assert cand["write_set"] == ["src/answer.txt"] and "src/input.txt" in cand["file_deps"]
    return cand


def _sign(world: World, candidate_id: str) -> None:
    """The verifier signs a pass receipt for the candidate's exact bytes (its own key)."""
    world.receipt(world.coord.candidate(world.admin, candidate_id))


async def two_agent_session(world: World, a: Agent, b: Agent) -> None:
    """A claims, submits and stalls; its lease expires; B claims, submits, is verified and
    completes; A's late completion is refused. Then the report's stale-dependency history."""
    task = world.new_task("double the number")
    o = await a.ok("orient")
    assert o["principal"]["id"] == world.agent.id and o["policy"]["text"]
    assert task.id in [t["id"] for t in o["open_tasks"]]
    assert task.id in [t["id"] for t in (await a.ok("list_tasks", status="open"))["tasks"]]
    assert (await a.ok("get_task", task_id=task.id))["task"]["fact"] == "open"

    claim_a = await a.ok("claim_task", task_id=task.id, lease_seconds=60)
    att_a = claim_a["attempt"]
    assert claim_a["contract_hash"] == task.contract_hash and att_a["status"] == "active"
    await a.ok("heartbeat", attempt_id=att_a["id"], lease_seconds=60)
    cand_a = await _submit(a, att_a["id"], "41\n", "a")
    await a.ok("leave_handoff", attempt_id=att_a["id"], artifacts={"src/input.txt": 1}, notes="stalled")

    busy = await b.refused("claim_task", task_id=task.id)
    assert busy["reason"] == "task_already_claimed" and busy["hints"][0]["hint"]
    world.clock.advance(61)  # A stalls past its lease
    stalled = await b.ok("get_task", task_id=task.id)
    # the docs' state mapping: an expired lease is no status change; the fact still shows A's candidate
    assert stalled["task"]["status"] == "claimed" and stalled["task"]["fact"] == "candidate prepared"
    assert (
        stalled["attempts"][0]["status"] == "active"
        and stalled["attempts"][0]["lease_deadline"] < world.clock()
    )
    handoff = await b.ok("read_handoff", task_id=task.id)
    assert handoff["artifacts"]["src/input.txt"]["current"] is True

    claim_b = await b.ok("claim_task", task_id=task.id, lease_seconds=600)
    assert claim_b["attempt"]["fence"] == att_a["fence"] + 1
    cand_b = await _submit(b, claim_b["attempt"]["id"], "42\n", "b")
    _sign(world, cand_b["id"])
    receipts = await b.ok("get_receipts", candidate_id=cand_b["id"])
    assert [r["body"]["result"] for r in receipts["receipts"]] == ["pass"]
    done = await b.ok(
        "complete_task", task_id=task.id, candidate_id=cand_b["id"], contract_hash=claim_b["contract_hash"]
    )
    assert done["completion"]["revisions"] == {"src/answer.txt": 2} and done["replay"] is False

    late = await a.refused(
        "complete_task", task_id=task.id, candidate_id=cand_a["id"], contract_hash=claim_a["contract_hash"]
    )
    failed = late["failed"]
    assert late["reason"] == failed[0]
    assert failed.index("attempt_superseded") < failed.index("lease_expired"), failed
    assert [h["reason"] for h in late["hints"]] == failed and all(h["hint"] for h in late["hints"])
    view = await b.ok("get_task", task_id=task.id)
    assert view["task"]["fact"] == "accepted" and view["task"]["still_current"] is True
    kinds = [e["kind"] for e in (await b.ok("task_events", task_id=task.id))["events"]]
    assert kinds.count("attempt.claimed") == 2 and {"completion.accepted", "completion.rejected"} <= set(
        kinds
    )

    await _stale_dependency(world, b)


async def _stale_dependency(world: World, b: Agent) -> None:
    """B reads src/input.txt, is verified, then the editor changes it: dependency_stale."""
    task = world.new_task("double it again")
    first = await b.ok("claim_task", task_id=task.id)
    released = await b.ok("release_task", attempt_id=first["attempt"]["id"])
    assert released["status"] == "released"
    claim = await b.ok("claim_task", task_id=task.id)
    arts = await b.ok("list_artifacts", prefix="src/")
    assert {x["path"] for x in arts["artifacts"]} == {"src/answer.txt", "src/input.txt"}
    cand = await _submit(b, claim["attempt"]["id"], "84\n", "b2", inline=True)
    _sign(world, cand["id"])
    world.edit("src/input.txt", b"42\n")  # the editor moves what B read
    stale = await b.refused(
        "complete_task", task_id=task.id, candidate_id=cand["id"], contract_hash=claim["contract_hash"]
    )
    assert stale["reason"] == "dependency_stale" and stale["failed"] == ["dependency_stale"]
    assert "rebase" in stale["hints"][0]["hint"]
