"""MCP `checkout` with `git` and `submit_workspace` on the clone (the stdio server over the
HTTP API): the same candidate `studiolo submit` derives from a git work tree."""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp import Client

from studiolo.core.canonical import digest_bytes
from studiolo.faces.cli._git_import import run_import
from studiolo.faces.mcp.inprocess import InProcessPort
from studiolo.faces.mcp.remote import RemotePort
from studiolo.faces.mcp.server import build_server
from tests.faces.helpers import Actors, new_task
from tests.faces.mcp.session import Agent
from tests.git.repos import small_repo


def test_a_git_workspace_through_mcp(live: Actors, tmp_path: Path) -> None:
    run_import(
        live.client("human"), str(small_repo(tmp_path / "small")), "main", None, False, 1 << 20, quiet=True
    )
    task = new_task(live.client("admin"))
    workdir = tmp_path / "ws"
    workdir.mkdir()
    port = RemotePort(live.client("agent"), url=live.url, token=live.tokens["agent"])
    local = InProcessPort(live.world.coord, live.world.agent)

    async def main() -> None:
        async with Client(build_server(lambda _ctx: port, workspace=workdir)) as client:
            a = Agent(client, workdir)
            attempt = (await a.ok("claim_task", task_id=task.id))["attempt"]["id"]
            out = await a.ok("checkout", directory="work", git=True)
            assert out["manifest"] == "work/.git/studiolo-checkout.json"
            assert set(out["files"]) == {"README.md", "bin/tool.sh", "src/lib.py"}
            work = workdir / "work"
            (work / "src" / "lib.py").write_text("def f():\n    return 3\n")
            (work / "src" / "new.py").write_text("X = 1\n")
            (work / "src" / "new.py").chmod(0o755)  # the exec bit travels with the bytes
            done = await a.ok("submit_workspace", attempt_id=attempt, directory="work")
            cand = done["candidate"]
            assert cand["files"] == {
                "src/lib.py": digest_bytes(b"def f():\n    return 3\n"),
                "src/new.py": digest_bytes(b"X = 1\n"),
            }
            assert cand["modes"] == {"src/new.py": "executable"}
            assert cand["bases"] == {"src/lib.py": out["files"]["src/lib.py"], "src/new.py": 0}
            assert done["uploaded"] == ["src/lib.py", "src/new.py"] and done["deleted"] == []
            again = await a.refused("checkout", directory="work", git=True)
            assert "not empty" in again["detail"]
            scoped = await a.refused("checkout", directory="other", git=True, prefix="src/")
            assert "whole project" in scoped["detail"]
        async with Client(build_server(lambda _ctx: local, workspace=workdir)) as client:
            refused = await Agent(client, workdir).refused("checkout", directory="fresh", git=True)
            assert "stdio server" in refused["detail"]

    anyio.run(main)
