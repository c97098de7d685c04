"""`tools/list` is lean (no pydantic titles, nullable scalars as type arrays) and every lean
schema accepts and rejects exactly what the schema pydantic generated does."""

from __future__ import annotations

import json
from typing import Any

import anyio
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.server.mcpserver.tools import Tool

from studiolo.faces.mcp.inprocess import InProcessPort
from studiolo.faces.mcp.schemas import lean
from studiolo.faces.mcp.server import build_server
from studiolo.faces.mcp.tools import Tools
from tests.world import World

_SAMPLES: list[Any] = [None, "", "abc", "abcd", 0, 3, -1, 2.5, True, [], ["a"], {}, {"a": 1}, {"a": None}]


def _keywords(schema: Any, in_map: bool = False) -> set[str]:
    """Every keyword used anywhere in a schema (not the property names)."""
    if isinstance(schema, list):
        return set().union(*(_keywords(s) for s in schema)) if schema else set()
    if not isinstance(schema, dict):
        return set()
    if in_map:
        return set().union(*(_keywords(s) for s in schema.values())) if schema else set()
    found = set(schema)
    for key, value in schema.items():
        found |= _keywords(value, in_map=key in ("properties", "$defs"))
    return found


def test_lean_keeps_what_validates() -> None:
    full = {
        "title": "X",
        "type": "object",
        "properties": {
            "title": {"title": "Title", "type": "string"},
            "name": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}], "default": None},
            "ids": {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]},
        },
        "required": ["title"],
    }
    small = lean(full)
    assert small["properties"]["name"] == {"type": ["string", "null"], "maxLength": 3, "default": None}
    assert "title" in small["properties"] and "title" not in small["properties"]["title"]
    a, b = Draft202012Validator(full), Draft202012Validator(small)
    for name in _SAMPLES:
        for ids in _SAMPLES:
            doc = {"title": "t", "name": name, "ids": ids}
            assert a.is_valid(doc) == b.is_valid(doc), doc


def test_tools_list_is_lean_and_equivalent(world: World) -> None:
    tools_of = Tools(lambda _ctx: InProcessPort(world.coord, world.agent))
    raw = [Tool.from_function(getattr(tools_of, name)) for name in ("get_task", "list_tasks")]
    server = build_server(lambda _ctx: InProcessPort(world.coord, world.agent), workspace=None)

    async def listed() -> list[Any]:
        async with Client(server) as c:
            return list((await c.list_tools()).tools)

    tools = {t.name: t for t in anyio.run(listed)}
    dumped = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools.values()]
    wire = json.dumps(dumped, separators=(",", ":"))
    assert len(wire) < 24_000, len(wire)  # 30k with pydantic's titles and anyOf nulls
    for tool in tools.values():
        assert "title" not in _keywords(tool.input_schema) | _keywords(tool.output_schema), tool.name
        assert "default" not in _keywords(tool.output_schema), tool.name
    for original in raw:
        listed_out = tools[original.name].output_schema
        assert original.fn_metadata.output_model is not None and listed_out is not None
        full = original.fn_metadata.output_model.model_json_schema()
        assert set(full["$defs"]) == set(listed_out["$defs"]), original.name
