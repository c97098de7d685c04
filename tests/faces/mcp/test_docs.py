"""docs/mcp.md documents every tool (with an example call that fits its input schema),
resource and prompt the server lists; the refusal hints cover exactly docs/reasons.md."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
from jsonschema import Draft202012Validator
from mcp import Client

from studiolo.faces.mcp.inprocess import InProcessPort
from studiolo.faces.mcp.refusals import HINTS
from studiolo.faces.mcp.server import build_server
from tests.world import World

ROOT = Path(__file__).resolve().parents[3]
DOC = (ROOT / "docs" / "mcp.md").read_text()


def _headings() -> set[str]:
    return set(re.findall(r"^### `([^`]+)`", DOC, flags=re.M))


def _examples() -> dict[str, dict[str, object]]:
    blocks = re.findall(r"^```json\n(\{\"name\".*?)^```", DOC, flags=re.M | re.S)
    calls = [json.loads(b) for b in blocks]
    return {c["name"]: c["arguments"] for c in calls}


def test_every_tool_resource_and_prompt_is_documented_with_a_valid_example(
    world: World, tmp_path: Path
) -> None:
    server = build_server(lambda _ctx: InProcessPort(world.coord, world.agent), workspace=tmp_path)

    async def listed() -> tuple[dict[str, dict[str, object]], set[str], set[str]]:
        async with Client(server) as c:
            tools = {t.name: t.input_schema for t in (await c.list_tools()).tools}
            templates = {t.uri_template for t in (await c.list_resource_templates()).resource_templates}
            templates |= {str(r.uri) for r in (await c.list_resources()).resources}
            prompts = {p.name for p in (await c.list_prompts()).prompts}
        return tools, templates, prompts

    tools, resources, prompts = anyio.run(listed)
    documented = _headings()
    assert set(tools) | resources | prompts == documented
    examples = _examples()
    assert set(examples) == set(tools)
    for name, arguments in examples.items():
        errors = [e.message for e in Draft202012Validator(tools[name]).iter_errors(arguments)]
        assert not errors, (name, errors)


def test_refusal_hints_cover_exactly_the_documented_reason_codes() -> None:
    reasons = (ROOT / "docs" / "reasons.md").read_text()
    documented = set(re.findall(r"^### `([a-z_]+)`", reasons, flags=re.M))
    assert set(HINTS) == documented
    assert all(0 < len(h) <= 100 and "\n" not in h for h in HINTS.values())


def test_the_readme_links_the_mcp_docs() -> None:
    assert "(docs/mcp.md)" in (ROOT / "README.md").read_text()
