"""`tools/list` is lean (no pydantic titles, nullable scalars as type arrays, definitions used
once written in place) and every lean schema accepts and rejects exactly what the schema
pydantic generated does."""

from __future__ import annotations

import json
from typing import Any

import anyio
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.server.mcpserver.tools import Tool

from studiolo.faces import render
from studiolo.faces.mcp.inprocess import InProcessPort
from studiolo.faces.mcp.schemas import inline_single_refs, lean
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
    listed_get = tools["get_task"].output_schema
    assert listed_get is not None and "$ref" not in json.dumps(listed_get)  # every definition used once
    full = raw[0].fn_metadata.output_model
    assert full is not None
    # a task with an attempt, a candidate, a receipt and a completion: every nested model present
    task = world.new_task()
    attempt = world.coord.claim(world.agent, task.id)
    cand = world.candidate(attempt, {"src/a.py": b"x"})
    receipt = world.receipt(cand)
    world.complete(task, attempt, cand, [receipt.id])
    instance = render.task_view(world.coord.task_view(world.agent, task.id)).model_dump(mode="json")
    a, b = Draft202012Validator(full.model_json_schema()), Draft202012Validator(listed_get)
    assert a.is_valid(instance) and b.is_valid(instance)
    checked = 0
    for variant in _variants(instance):  # every value along the instance, replaced by each sample
        assert a.is_valid(variant) == b.is_valid(variant), variant
        checked += 1
    assert checked > 500


def _variants(doc: Any) -> Any:
    if isinstance(doc, dict):
        for key, value in doc.items():
            for sample in _SAMPLES:
                yield {**doc, key: sample}
            for inner in _variants(value):
                yield {**doc, key: inner}
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            for inner in _variants(value):
                yield [*doc[:i], inner, *doc[i + 1 :]]


def test_a_definition_used_once_is_written_in_place_and_a_shared_or_recursive_one_is_kept() -> None:
    schema = {
        "type": "object",
        "properties": {
            "once": {"$ref": "#/$defs/Once"},
            "twice_a": {"$ref": "#/$defs/Twice"},
            "twice_b": {"type": "array", "items": {"$ref": "#/$defs/Twice"}},
            "tree": {"$ref": "#/$defs/Tree"},
            "nested": {"$ref": "#/$defs/Outer"},
            "even": {"$ref": "#/$defs/Even"},
        },
        "$defs": {
            "Once": {"type": "string", "maxLength": 2},
            "Twice": {"type": "integer", "minimum": 0},
            "Tree": {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}},
            },
            "Outer": {"type": "object", "properties": {"inner": {"$ref": "#/$defs/Inner"}}},
            "Inner": {"type": "boolean"},
            "Even": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Odd"}}},
            "Odd": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Even"}}},
        },
    }
    small = inline_single_refs(schema)
    assert small["properties"]["once"] == {"type": "string", "maxLength": 2}
    assert small["properties"]["nested"] == {"type": "object", "properties": {"inner": {"type": "boolean"}}}
    # shared; recursive (by the root and itself); mutually recursive (Odd is referenced once)
    assert set(small["$defs"]) == {"Twice", "Tree", "Even", "Odd"}
    a, b = Draft202012Validator(schema), Draft202012Validator(small)
    docs = [
        {
            "once": s,
            "twice_a": t,
            "twice_b": [t],
            "tree": {"kids": [{"kids": [s]}]},
            "nested": {"inner": s},
            "even": {"next": {"next": s}},
        }
        for s in _SAMPLES
        for t in _SAMPLES
    ]
    for doc in docs:
        assert a.is_valid(doc) == b.is_valid(doc), doc


def test_a_nullable_enum_keeps_null_and_a_null_rejecting_keyword_keeps_its_any_of() -> None:
    schema = {
        "type": "object",
        "properties": {
            "encoding": {"anyOf": [{"type": "string", "enum": ["utf-8", "base64"]}, {"type": "null"}]},
            "kind": {"anyOf": [{"type": "string", "const": "x"}, {"type": "null"}]},
            "ref": {"anyOf": [{"type": "object", "allOf": [{"required": ["a"]}]}, {"type": "null"}]},
        },
    }
    small = lean(schema)
    assert small["properties"]["encoding"] == {"type": ["string", "null"], "enum": ["utf-8", "base64", None]}
    assert "anyOf" in small["properties"]["kind"] and "anyOf" in small["properties"]["ref"]
    a, b = Draft202012Validator(schema), Draft202012Validator(small)
    for sample in [*_SAMPLES, "utf-8", "base64", "x", {"a": 1}]:
        for key in ("encoding", "kind", "ref"):
            assert a.is_valid({key: sample}) == b.is_valid({key: sample}), (key, sample)


def test_every_listed_schema_accepts_what_pydantic_s_schema_accepts(world: World) -> None:
    """Each tool's lean input and output schema against the schema pydantic generated for
    it: every top-level property set to each sample (and to each value its enum lists)."""
    tools_of = Tools(lambda _ctx: InProcessPort(world.coord, world.agent))
    for tool in tools_of.tools():
        raw = Tool.from_function(getattr(tools_of, tool.name))
        pairs = [
            (raw.parameters, tool.parameters),
            (raw.fn_metadata.output_schema, tool.fn_metadata.output_schema),
        ]
        for full, small in pairs:
            if full is None or small is None:
                continue
            a, b = Draft202012Validator(full), Draft202012Validator(small)
            for key, prop in small.get("properties", {}).items():
                for sample in [*_SAMPLES, *prop.get("enum", [])]:
                    assert a.is_valid({key: sample}) == b.is_valid({key: sample}), (tool.name, key, sample)
