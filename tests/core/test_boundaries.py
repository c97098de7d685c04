"""The architecture as a test: the core is pure; SQL lives only in store/."""

from __future__ import annotations

import ast
from pathlib import Path

import studiolo

PKG = Path(studiolo.__file__).parent
FORBIDDEN_IN_CORE = (
    "studiolo.store",
    "studiolo.service",
    "studiolo.faces",
    "sqlalchemy",
    "fastapi",
    "starlette",
    "httpx",
    "psycopg",
    "typer",
    "time",
    "datetime",
    "random",
    "os",
    "socket",
    "sqlite3",
)


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_core_imports_nothing_impure() -> None:
    for path in (PKG / "core").glob("*.py"):
        for name in _imports(path):
            assert not any(name == f or name.startswith(f + ".") for f in FORBIDDEN_IN_CORE), (
                f"{path.name} imports {name}"
            )


def test_sql_only_in_store() -> None:
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).as_posix()
        if rel.startswith("store/"):
            continue
        for name in _imports(path):
            assert not name.startswith("sqlalchemy"), f"{rel} imports {name}"
            assert not name.startswith("psycopg") and name != "sqlite3", f"{rel} imports {name}"
