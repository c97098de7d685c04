"""The architecture as a test: what each layer may import (allowlists, not denylists).

Statically, every import statement of a layer's files (including those inside functions)
must be on the layer's list. Dynamically, importing a client-side entry point in a fresh
interpreter must load no server module: that is what an agent's machine pays for.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

import studiolo

PKG = Path(studiolo.__file__).parent

# The standard library the pure core may use: no clock, randomness, I/O, processes or SQL.
PURE_STDLIB = frozenset(
    {
        "__future__",
        "abc",
        "base64",
        "collections",
        "dataclasses",
        "enum",
        "fnmatch",
        "functools",
        "hashlib",
        "ipaddress",  # parsing addresses (remote origins), no I/O
        "itertools",
        "json",
        "math",
        "operator",
        "re",
        "string",
        "types",
        "typing",
        "unicodedata",
        "urllib.parse",  # splitting URLs, no I/O
    }
)
CORE = PURE_STDLIB | {"rfc8785", "studiolo.core", "studiolo._exceptions"}
# importlib: the operation table resolves its wire models by name, lazily (client start-up)
API = CORE | {"pydantic", "pydantic_core", "studiolo.api", "importlib"}
# The agent's side: the whole standard library, the client's dependencies, the wire models.
CLIENT = (
    frozenset(sys.stdlib_module_names)
    | API
    | {
        "httpx",
        "typer",
        "rich",
        "cryptography",
        "studiolo.settings",
        "studiolo.client_settings",
        "studiolo.keys",
        "studiolo.client",
        "studiolo._client_ops",  # the client's generated operations
        "studiolo.confined",
        "studiolo.faces.cli._lazy",
        "studiolo.faces.cli._output",
        "studiolo.faces.cli._state",
        "studiolo.git.agent",  # a git work tree: the `git` binary and the HTTP client, no pygit2
        "studiolo.git.worktree",
    }
)
CLIENT_FILES = (
    "client.py",
    "_client_ops.py",
    "confined.py",
    "keys.py",
    "_exceptions.py",
    "settings.py",
    "client_settings.py",
    "verifier/http.py",
    "faces/cli/__init__.py",
    "faces/cli/_lazy.py",
    "faces/cli/_output.py",
    "faces/cli/_state.py",
    "faces/cli/work.py",
    "faces/cli/content.py",
    "faces/cli/evidence.py",
    "faces/cli/admin.py",
    "git/agent.py",
    "git/worktree.py",
)
# What a client-side entry point must never load, directly or through anything it imports.
SERVER = (
    "sqlalchemy",
    "alembic",
    "psycopg",
    "fastapi",
    "uvicorn",
    "starlette",
    "studiolo.service",
    "studiolo.store",
)


def _imports(path: Path) -> set[str]:
    """Every absolute import of a file, `from m import n` as `m.n` (n may be a module)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def _outside(names: Iterable[str], allowed: Iterable[str]) -> list[str]:
    allow = tuple(allowed)
    return sorted(n for n in names if not any(n == a or n.startswith(a + ".") for a in allow))


def _layer(files: Iterable[Path], allowed: frozenset[str]) -> dict[str, list[str]]:
    found = {p.relative_to(PKG).as_posix(): _outside(_imports(p), allowed) for p in files}
    return {rel: bad for rel, bad in found.items() if bad}


def test_core_imports_only_the_pure_standard_library() -> None:
    assert _layer((PKG / "core").glob("*.py"), CORE) == {}


def test_api_imports_only_core_and_pydantic() -> None:
    assert _layer((PKG / "api").glob("*.py"), API) == {}


def test_the_client_side_imports_only_the_client_side() -> None:
    assert _layer((PKG / f for f in CLIENT_FILES), CLIENT) == {}


def test_sql_drivers_only_in_store() -> None:
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).as_posix()
        allowed = frozenset(sys.stdlib_module_names) - {"sqlite3"} | {"studiolo", "sqlalchemy", "psycopg"}
        bad = [
            n
            for n in _outside(_imports(path), allowed)
            if n.split(".")[0] in ("sqlalchemy", "psycopg", "sqlite3")
        ]
        assert rel.startswith("store/") or not bad, f"{rel} imports {bad}"


_PROBE = """
import json, sys
{statement}
print(json.dumps(sorted(sys.modules)))
"""


def _loaded(statement: str) -> list[str]:
    """The modules loaded by `statement` in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", _PROBE.format(statement=statement)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    loaded: list[str] = json.loads(out.stdout.splitlines()[-1])
    return loaded


@pytest.mark.parametrize(
    "statement",
    [
        "import studiolo.api",
        "import studiolo.client",
        "import studiolo.verifier.http",
        "import studiolo.faces.cli",
        "import studiolo.faces.cli.work, studiolo.faces.cli.content, studiolo.faces.cli.evidence, "
        "studiolo.faces.cli.admin",
        "from typer.testing import CliRunner; from studiolo.faces.cli import app; "
        "assert CliRunner().invoke(app, ['--help']).exit_code == 0",
    ],
    ids=["api", "client", "verifier.http", "cli", "worker commands", "cli --help"],
)
def test_a_client_side_entry_point_loads_no_server(statement: str) -> None:
    loaded = _loaded(statement)
    assert [m for m in loaded if any(m == s or m.startswith(s + ".") for s in SERVER)] == []


def test_the_mcp_stdio_server_loads_no_ledger() -> None:
    """The MCP SDK brings starlette and uvicorn along; the ledger must stay behind."""
    loaded = _loaded("import studiolo.faces.cli.mcp, studiolo.faces.mcp.remote, studiolo.faces.mcp.server")
    ledger = ("sqlalchemy", "alembic", "psycopg", "studiolo.service", "studiolo.store")
    assert [m for m in loaded if any(m == s or m.startswith(s + ".") for s in ledger)] == []


def test_the_probe_sees_a_server_module() -> None:
    """The negative control: the probe does report what an operator command loads."""
    assert "sqlalchemy" in _loaded("import studiolo.faces.cli.ledger")


def test_a_worker_command_loads_no_http_command_line() -> None:
    """`import httpx` would bring httpx's own CLI (click, pygments); `studiolo` keeps it out,
    and output that is captured (here: the error, on a pipe) is printed without rich."""
    loaded = _loaded(
        "import sys\nfrom studiolo.faces.cli import main\n"
        "sys.argv = ['studiolo', '--url', 'http://127.0.0.1:9', '--token', 't', 'whoami']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code == 4, exc.code"
    )
    assert "httpx" in loaded and "studiolo.client" in loaded
    assert [m for m in loaded if m.split(".")[0] in ("click", "pygments", "rich")] == []
