"""The stdio MCP server runs on the agent's machine: `studiolo mcp` and the modules it serves
from load no service, store, SQL or web framework of ours (only what the MCP SDK itself
imports: starlette, and uvicorn through sse-starlette)."""

from __future__ import annotations

import json
import subprocess
import sys

FORBIDDEN = (
    "sqlalchemy",
    "alembic",
    "psycopg",
    "fastapi",
    "studiolo.service",
    "studiolo.store",
    "studiolo.faces.http.app",
    "studiolo.faces.render",
    "studiolo.faces.http.deps",
    "studiolo.faces.mcp.inprocess",
    "studiolo.faces.mcp.mount",
)
_PROBE = """
import json, sys
from typer.testing import CliRunner
from studiolo.faces.cli import app
assert CliRunner().invoke(app, ["mcp", "--help"]).exit_code == 0
import studiolo.faces.mcp.remote, studiolo.faces.mcp.server, studiolo.faces.mcp.workspace
print(json.dumps(sorted(sys.modules)))
"""


def _loaded(probe: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    loaded: list[str] = json.loads(out.stdout.splitlines()[-1])
    return loaded


def _bad(loaded: list[str]) -> list[str]:
    return [m for m in loaded if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]


def test_the_stdio_server_loads_no_server_module() -> None:
    loaded = _loaded(_PROBE)
    assert "mcp.server" in loaded and "studiolo.client" in loaded
    assert _bad(loaded) == []


def test_the_probe_sees_the_http_mount_load_the_door() -> None:
    """The negative control: the /mcp mount (server side) does load the service."""
    probe = "import json, sys, studiolo.faces.mcp.mount\nprint(json.dumps(sorted(sys.modules)))"
    assert "studiolo.service" in _bad(_loaded(probe))
