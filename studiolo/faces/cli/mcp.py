"""`studiolo mcp`: the MCP server over stdio, for an AI client that launches it locally.

It talks to a Studiolo server through the light HTTP client (`STUDIOLO_URL` +
`STUDIOLO_TOKEN`), never the ledger, and may read and write only below `--workdir`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from studiolo.faces.cli._state import state

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)


def mcp(
    ctx: typer.Context,
    workdir: Annotated[
        Path, typer.Option(help="the working directory checkout/submit_workspace are confined to")
    ] = Path("."),
) -> None:
    """Serve MCP on stdio (Claude Code, Codex, Cursor) as your token's principal."""
    from studiolo.faces.mcp.remote import RemotePort
    from studiolo.faces.mcp.server import run_stdio

    st = state(ctx)
    port = RemotePort(st.client(), st.settings.project, url=st.settings.url, token=st.settings.token)
    try:
        run_stdio(port, workdir)
    finally:
        port.close()
