"""Every string argument of every MCP tool is bounded (issue 32, Also): `read_artifact` with a
100 KB path reached the HTTP client, which raised an unexpected exception."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from studiolo.client import Client as HttpClient
from studiolo.faces.mcp.remote import RemotePort
from studiolo.faces.mcp.server import build_server
from tests.faces.mcp.conftest import Live


def _unbounded(schema: Any, where: str, defs: dict[str, Any]) -> list[str]:
    """The places in a JSON schema where a string may be of any length."""
    if isinstance(schema, list):
        return [x for i, s in enumerate(schema) for x in _unbounded(s, f"{where}[{i}]", defs)]
    if not isinstance(schema, dict):
        return []
    if "$ref" in schema:
        return _unbounded(defs[schema["$ref"].split("/")[-1]], where, defs)
    found = (
        [where]
        if schema.get("type") == "string" and "maxLength" not in schema and "enum" not in schema
        else []
    )
    if (
        schema.get("type") == "object"
        and schema.get("additionalProperties")
        and "propertyNames" not in schema
    ):
        found.append(f"{where} (keys)")
    for key, sub in schema.items():
        if key in ("properties", "$defs"):
            found += [x for name, s in sub.items() for x in _unbounded(s, f"{where}.{name}", defs)]
        elif key in ("items", "anyOf", "oneOf", "allOf", "additionalProperties", "propertyNames"):
            found += _unbounded(sub, f"{where}/{key}", defs)
    return found


def test_every_string_argument_of_every_tool_is_bounded(tmp_path: Path) -> None:
    server = build_server(lambda _ctx: None, workspace=tmp_path)  # type: ignore[arg-type, return-value]

    async def main() -> list[str]:
        async with Client(server) as c:
            tools = (await c.list_tools()).tools
        return [x for t in tools for x in _unbounded(t.input_schema, t.name, t.input_schema.get("$defs", {}))]

    assert anyio.run(main) == []


def test_a_100_kb_path_is_refused_before_it_reaches_the_service(live: Live) -> None:
    port = RemotePort(HttpClient(live.url, live.tokens["agent"], timeout=10))
    sent: list[str] = []
    real = port.client._send

    def record(method: str, url: str, **kw: Any) -> Any:
        sent.append(url)
        return real(method, url, **kw)

    port.client._send = record  # type: ignore[method-assign]

    async def main() -> None:
        async with Client(build_server(lambda _ctx: port)) as c:
            for tool, args in (
                ("read_artifact", {"path": "a" * 100_000}),
                ("list_artifacts", {"prefix": "a/" * 50_000}),
                (
                    "complete_task",
                    {"task_id": "t", "candidate_id": "c", "contract_hash": "h", "request_id": "r" * 100_000},
                ),
            ):
                result = await c.call_tool(tool, args)
                assert result.is_error and "at most" in str(result.content), (tool, result.content)

    anyio.run(main)
    port.close()
    assert sent == []
