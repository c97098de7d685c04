"""The layout as a test: faces import the door, the wire models and the shared face helpers,
never each other (but where one face mounts or launches another, listed below); background
workers live in `studiolo/workers/`, not in a face, and reach the ledger only through the
door. Allowlists: a new cross-import fails here until it is listed with its reason."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import studiolo

PKG = Path(studiolo.__file__).parent
FACES = ("http", "mcp", "a2a", "web", "cli")

# (importing module, imported face module): why a face may name another.
CROSS_FACE = {
    ("studiolo.faces.http.app", "studiolo.faces.a2a"): "the app mounts the A2A face",
    ("studiolo.faces.http.app", "studiolo.faces.mcp.mount"): "the app mounts the MCP face",
    ("studiolo.faces.http.app", "studiolo.faces.web"): "the app mounts the dashboard",
    ("studiolo.faces.cli.ledger", "studiolo.faces.http.server"): "`studiolo serve` starts it",
    ("studiolo.faces.cli.mcp", "studiolo.faces.mcp.remote"): "`studiolo mcp` starts it",
    ("studiolo.faces.cli.mcp", "studiolo.faces.mcp.server"): "`studiolo mcp` starts it",
}
# Modules of faces/ that start a thread of their own: the server itself, not a worker.
FACE_THREADS = {
    "studiolo.faces.http.server": "the uvicorn server's thread (an embedded server)",
    "studiolo.faces.http.leases": "the heartbeat lane's batcher (the store's group commit may replace it)",
}


def _module(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _imports(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            yield from (f"{node.module}.{a.name}" for a in node.names)


def _face_of(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) >= 3 and parts[:2] == ["studiolo", "faces"] and parts[2] in FACES:
        return parts[2]
    return None


def _is_module(name: str) -> bool:
    rel = Path(*name.split("."))
    return (PKG.parent / rel).with_suffix(".py").is_file() or (PKG.parent / rel / "__init__.py").is_file()


def cross_face_imports() -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for path in (PKG / "faces").rglob("*.py"):
        here = _module(path)
        mine = _face_of(here)
        for name in _imports(path):
            theirs = _face_of(name)
            if mine and theirs and theirs != mine and _is_module(name):
                found.add((here, name))
    return found


def test_faces_do_not_import_each_other() -> None:
    unlisted = sorted(cross_face_imports() - set(CROSS_FACE))
    assert not unlisted, unlisted


def test_the_allowlist_has_no_stale_entry() -> None:
    assert set(CROSS_FACE) <= cross_face_imports()


def _starts_threads(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "Thread"
        for n in ast.walk(tree)
    )


def test_background_workers_live_in_workers_not_in_faces() -> None:
    threads = {_module(p) for p in (PKG / "faces").rglob("*.py") if _starts_threads(p)}
    assert threads <= set(FACE_THREADS), sorted(threads - set(FACE_THREADS))
    assert any(_starts_threads(p) for p in (PKG / "workers").rglob("*.py"))


def test_workers_use_the_door_not_a_face_nor_the_store() -> None:
    for path in (PKG / "workers").rglob("*.py"):
        for name in _imports(path):
            assert not name.startswith(("studiolo.faces", "studiolo.store")), (_module(path), name)


def test_the_scan_sees_a_cross_face_import(tmp_path: Path) -> None:
    planted = tmp_path / "x.py"
    planted.write_text("from studiolo.faces.http import deps\nimport studiolo.faces.web.session\n")
    names = set(_imports(planted))
    assert {"studiolo.faces.http.deps", "studiolo.faces.web.session"} <= names
    assert _face_of("studiolo.faces.http.deps") == "http" and _face_of("studiolo.faces.render") is None


def _private_reaches(path: Path) -> list[str]:
    """`self.<collaborator>._private` and `from <module> import _private` in one file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and isinstance(node.value, ast.Attribute)
            and isinstance(node.value.value, ast.Name)
            and node.value.value.id == "self"
        ):
            found.append(f"{node.lineno}: self.{node.value.attr}.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("studiolo."):
            found += [f"{node.lineno}: {node.module} {a.name}" for a in node.names if a.name.startswith("_")]
    return found


def test_no_service_reaches_into_another() -> None:
    """The door is composed (`service/__init__.py`): a service uses what it is handed, through
    public methods; nobody calls a collaborator's private method or imports a private helper."""
    for folder in ("service", "workers"):
        for path in (PKG / folder).rglob("*.py"):
            assert not _private_reaches(path), (path.name, _private_reaches(path))


def test_the_door_is_composed_not_inherited() -> None:
    from studiolo.service import Coordinator

    assert Coordinator.__mro__ == (Coordinator, object)
    tree = ast.parse((PKG / "service" / "__init__.py").read_text(encoding="utf-8"))
    (door,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Coordinator"]
    assert not door.bases
    for path in (PKG / "service").glob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and node.name.endswith("Ops"):
                assert not node.bases, f"{path.name}: {node.name} inherits"


# Public methods of a service that other services use, not the door's (`service/__init__.py`).
SERVICE_ONLY = {
    "contract",
    "start_attempt",
    "end_current_attempt",
    "view_of",
    "views_of",
    "confined",
    "visible_view",
    "issue",
    "delegation",
    "complete_in",
}


def test_every_public_method_of_a_service_is_the_doors() -> None:
    from studiolo.service import Coordinator

    missing = []
    for path in (PKG / "service").glob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and node.name.endswith("Ops"):
                for fn in node.body:
                    public = isinstance(fn, ast.FunctionDef) and not fn.name.startswith("_")
                    if public and fn.name not in SERVICE_ONLY and not hasattr(Coordinator, fn.name):
                        missing.append(f"{node.name}.{fn.name}")
    assert not missing, missing


def test_the_door_never_asks_which_back_end_it_has() -> None:
    """STYLE 16: back-end choices are the store's (`Store.read_ahead`, `Store.batch_gate`)."""
    asks = [
        f"{path.name}:{node.lineno}"
        for path in (PKG / "service").glob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute) and node.attr in ("is_sqlite", "dialect")
    ]
    assert not asks, asks


DEFERRED = ("together", "expect_clock")  # the store's ways to batch round trips (`store/steps.py`)


def test_only_the_store_batches_its_reads() -> None:
    """Issue 34: outside `store/`, reads are plain calls; no `*_later` method (a read sent now
    and answered when called), `together` or `expect_clock` is defined or called."""
    found = []
    for path in PKG.rglob("*.py"):
        if path.is_relative_to(PKG / "store"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = node.name if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else None
            name = node.attr if isinstance(node, ast.Attribute) else name
            if name and name != "call_later" and (name.endswith("_later") or name in DEFERRED):
                found.append(f"{path.relative_to(PKG)}:{node.lineno} {name}")
    assert not found, found
