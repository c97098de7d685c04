"""Lean tool schemas: what `tools/list` sends, with every validating keyword kept.

pydantic's JSON Schemas carry a `title` on every model and property (a fifth of the wire)
and spell `X | None` as `anyOf: [X, {"type": "null"}]`. `lean` drops the titles, drops the
`default`s of output schemas (an output is never filled in), and writes a nullable scalar as
`"type": [T, "null"]`: the same instances validate. Each output schema keeps its own `$defs`
(a client resolves references only inside one schema), and a definition referenced once is
written in place (`inline_single_refs`): shorter on the wire, and a client validating every
result (the Python SDK does, with `jsonschema`) resolves no reference for it: a `get_task`
result validated in 0.79 ms instead of 1.00 ms (docs/mcp.md).
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver.tools import Tool

__all__ = ["inline_single_refs", "lean", "lean_tool"]

_MAPS = frozenset({"properties", "$defs", "patternProperties"})  # name → schema, not keywords
_LOCAL = "#/$defs/"


def lean_tool(tool: Tool) -> Tool:
    """The tool with lean input and output schemas (before anything read them)."""
    tool.parameters = lean(tool.parameters)
    meta = tool.fn_metadata
    if meta.output_schema is not None:
        meta.output_schema = inline_single_refs(
            lean(meta.output_schema, drop=frozenset({"title", "default"}))
        )
    return tool


def inline_single_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Each `$defs` entry referenced exactly once (as a bare `{"$ref": "#/$defs/N"}`), and
    not recursive, written where it is referenced; the entries left are those still
    referenced. Anything else (a ref with siblings, a remote ref) is kept as it is."""
    defs = schema.get("$defs")
    if not isinstance(defs, dict):
        return schema
    counts: dict[str, int] = {}
    _count_refs(schema, counts)
    inline = {n for n, c in counts.items() if c == 1 and n in defs and not _reaches(n, n, defs, set())}

    def put(node: Any) -> Any:
        if isinstance(node, list):
            return [put(v) for v in node]
        if not isinstance(node, dict):
            return node
        name = _bare_ref(node)
        if name in inline:
            return put(defs[name])
        return {k: put(v) for k, v in node.items() if k != "$defs"}

    out: dict[str, Any] = {k: put(v) for k, v in schema.items() if k != "$defs"}
    kept = {n: put(d) for n, d in defs.items() if n not in inline}
    used: dict[str, int] = {}
    _count_refs(out | {"$defs": kept}, used)
    kept = {n: d for n, d in kept.items() if used.get(n)}
    return out | {"$defs": kept} if kept else out


def _bare_ref(node: dict[str, Any]) -> str | None:
    ref = node.get("$ref")
    if len(node) == 1 and isinstance(ref, str) and ref.startswith(_LOCAL):
        return ref[len(_LOCAL) :]
    return None


def _count_refs(node: Any, counts: dict[str, int]) -> None:
    if isinstance(node, list):
        for v in node:
            _count_refs(v, counts)
    elif isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_LOCAL):
            name = ref[len(_LOCAL) :]
            # a ref beside other keywords is never inlined: count it twice so it stays
            counts[name] = counts.get(name, 0) + (1 if len(node) == 1 else 2)
        for v in node.values():
            _count_refs(v, counts)


def _reaches(start: str, target: str, defs: dict[str, Any], seen: set[str]) -> bool:
    """Whether definition `start` refers (through other definitions) to `target`."""
    found: dict[str, int] = {}
    _count_refs(defs.get(start), found)
    for name in found:
        if name == target:
            return True
        if name not in seen and name in defs:
            seen.add(name)
            if _reaches(name, target, defs, seen):
                return True
    return False


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


# Keywords that constrain only instances of one type (or only annotate): beside `"type": [T,
# "null"]` they leave null valid, so `anyOf: [{type: T, …}, {type: null}]` may be merged.
# Anything else (`const`, `allOf`, `$ref`, `not`, …) applies to null too: such a pair is kept.
_NULL_SAFE = frozenset(
    {
        *("type", "description", "default", "examples", "title", "format", "pattern"),
        *("minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"),
        *("multipleOf", "items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"),
        *("properties", "required", "additionalProperties", "patternProperties", "propertyNames"),
        *("minProperties", "maxProperties"),
    }
)


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """`{"anyOf": [{"type": T, …}, {"type": "null"}]}` → `{"type": [T, "null"], …}`, when
    that accepts exactly the same instances: every other keyword of the `T` branch ignores
    null, or is an `enum`, which then lists null too."""
    options = schema.get("anyOf")
    if not isinstance(options, list) or len(options) != 2 or {"type": "null"} not in options:
        return schema
    (other,) = [o for o in options if o != {"type": "null"}]
    kind = other.get("type")
    if not isinstance(kind, str) or set(other) & set(schema) or not set(other) <= _NULL_SAFE | {"enum"}:
        return schema
    rest = {k: v for k, v in schema.items() if k != "anyOf"}
    merged = {**rest, **other, "type": [kind, "null"]}
    if isinstance(other.get("enum"), list) and None not in other["enum"]:
        merged["enum"] = [*other["enum"], None]
    return merged
