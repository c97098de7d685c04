"""`build_server`: the MCP server over a `PortFor`, and `run_stdio`: `studiolo mcp`.

The stdio path imports only client-side modules (the client, the wire models, the core);
the in-process adapter and the HTTP mount live in `inprocess.py` and `http.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp.server import MCPServer
from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.settings import AuthSettings

from studiolo import __version__
from studiolo.faces.mcp.guide import Guide
from studiolo.faces.mcp.port import StudioloPort
from studiolo.faces.mcp.tools import PortFor, Tools, WorkspaceTools
from studiolo.faces.mcp.workspace import Workspace

__all__ = ["INSTRUCTIONS", "build_server", "run_stdio"]

INSTRUCTIONS = (
    "Studiolo coordinates agents that share one project. Call `orient` first; the prompt "
    "`work-on-task` gives the protocol. A task is done only when `complete_task` accepts it; "
    "every refusal names the failed predicates in order with a recovery hint."
)


def build_server(
    port_for: PortFor,
    *,
    workspace: Path | None = None,
    token_verifier: TokenVerifier | None = None,
    auth: AuthSettings | None = None,
) -> MCPServer[Any]:
    """The tools, resources and prompt; with `workspace`, also `checkout`/`submit_workspace`."""
    if workspace is None:
        tools = Tools(port_for).tools()
    else:
        local = Workspace(workspace)
        tools = Tools(port_for, on_read=local.record_read).tools() + WorkspaceTools(port_for, local).tools()
    server: MCPServer[Any] = MCPServer(
        "studiolo",
        instructions=INSTRUCTIONS,
        version=__version__,
        token_verifier=token_verifier,
        auth=auth,
        log_level="WARNING",
        tools=tools,
    )
    Guide(port_for).register(server)
    return server


def run_stdio(port: StudioloPort, workspace: Path) -> None:
    """Serve MCP on stdin/stdout for one local client, as the token's principal."""
    build_server(lambda _ctx: port, workspace=workspace).run("stdio")
