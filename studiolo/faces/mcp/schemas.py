"""Lean tool schemas: what `tools/list` sends, with every validating keyword kept.

pydantic's JSON Schemas carry a `title` on every model and property (a fifth of the wire)
and spell `X | None` as `anyOf: [X, {"type": "null"}]`. `lean` drops the titles, drops the
`default`s of output schemas (an output is never filled in), and writes a nullable scalar as
`"type": [T, "null"]`: the same instances validate. Each output schema keeps its own `$defs`
(a client resolves references only inside one schema).
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver.tools import Tool

__all__ = ["lean", "lean_tool"]

_MAPS = frozenset({"properties", "$defs", "patternProperties"})  # name → schema, not keywords


def lean_tool(tool: Tool) -> Tool:
    """The tool with lean input and output schemas (before anything read them)."""
    tool.parameters = lean(tool.parameters)
    meta = tool.fn_metadata
    if meta.output_schema is not None:
        meta.output_schema = lean(meta.output_schema, drop=frozenset({"title", "default"}))
    return tool


def lean(schema: dict[str, Any], drop: frozenset[str] = frozenset({"title"})) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in drop:
            continue
        if key in _MAPS and isinstance(value, dict):
            out[key] = {name: _node(sub, drop) for name, sub in value.items()}
        else:
            out[key] = _node(value, drop)
    return _nullable(out)


def _node(value: Any, drop: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return lean(value, drop)
    if isinstance(value, list):
        return [_node(v, drop) for v in value]
    return value


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """`{"anyOf": [{"type": T, …}, {"type": "null"}]}` → `{"type": [T, "null"], …}`."""
    options = schema.get("anyOf")
    if not isinstance(options, list) or len(options) != 2 or {"type": "null"} not in options:
        return schema
    (other,) = [o for o in options if o != {"type": "null"}]
    kind = other.get("type")
    if not isinstance(kind, str) or set(other) & set(schema):
        return schema
    rest = {k: v for k, v in schema.items() if k != "anyOf"}
    return {**rest, **other, "type": [kind, "null"]}
