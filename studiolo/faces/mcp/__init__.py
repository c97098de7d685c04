"""The MCP face: Studiolo's tools, resources and prompt for AI coding clients.

One tool set (`tools.py`) over one interface (`port.StudioloPort`) with two adapters:
`inprocess.InProcessPort` (the door in this process; served over streamable HTTP at `/mcp`
by `http.py`) and `remote.RemotePort` (the HTTP API through `studiolo.client`; served over
stdio by `studiolo mcp`, which can also read and write the agent's working directory,
`workspace.py`). The stdio path imports only client-side modules: no service, no store.
"""

__all__: list[str] = []
