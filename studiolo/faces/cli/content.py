"""Content commands: check out artifacts, submit a directory as a candidate, read and edit
artifacts, record observations.

`checkout` writes `.studiolo-checkout.json` next to the files: the revision and digest of
everything it wrote. `submit` compares the directory with it: changed and new files are the
candidate's files (uploaded), removed files are deletions, their checkout revisions are the
base revisions (0 for new paths), and the unchanged checked-out files are the declared
dependencies (or only those named with `--dep`).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Annotated, Any

import typer

from studiolo.client import Client, is_git_segment
from studiolo.confined import UntrustedResponse, confined_path, write_confined
from studiolo.core.enums import FileMode
from studiolo.faces.cli._output import Printer
from studiolo.faces.cli._state import JsonOpt, emit, state, table

__all__ = ["MANIFEST", "register"]

MANIFEST = ".studiolo-checkout.json"
_SKIP_DIRS = {".git", ".studiolo", "__pycache__"}
artifact_app = typer.Typer(help="Artifacts: list, show, cat, put (a direct edit).", no_args_is_help=True)
Project = Annotated[str | None, typer.Option("--project", "-p", help="Project id (default: the token's).")]


def register(app: typer.Typer) -> None:
    app.add_typer(artifact_app, name="artifact")
    for fn in (checkout, submit, observe):
        app.command(fn.__name__)(fn)


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def checkout(
    ctx: typer.Context,
    directory: Path,
    prefix: Annotated[str, typer.Option(help="only paths under this prefix")] = "",
    project: Project = None,
    git: Annotated[bool, typer.Option("--git", help="clone the project's git branch instead")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Write the current artifacts (under a prefix) into a directory, with a manifest.

    Every path stays inside DIRECTORY (no `..`, absolute paths, `.git`, or symlinks) and
    every blob is checked against its digest; anything else is refused before it is written.
    With `--git`: a clone of the published branch (the whole project; docs/git.md), its
    manifest in `.git/`; `submit` then diffs the work tree against the base commit.
    """
    st = state(ctx, json_out)
    if git:
        from studiolo.git.agent import checkout_git

        with st.client() as c:
            done = checkout_git(c, st.settings.url, st.settings.token, directory, c.project_id(project))
        emit(st, done, lambda con: con.print(f"cloned {done['base_commit']} into {directory}"))
        return
    files: dict[str, dict[str, Any]] = {}
    with st.client() as c:
        pid = c.project_id(project)
        collection = c.collection(prefix, project=pid)
        arts = [(a, a.digest) for a in c.artifacts(prefix, project=pid) if a.digest is not None]
        for art, _ in arts:  # every path is checked before anything is written
            if confined_path(art.path) == MANIFEST:
                raise UntrustedResponse(f"the server sent an artifact named {MANIFEST}")
        directory.mkdir(parents=True, exist_ok=True)
        for art, digest in arts:
            executable = art.mode is FileMode.EXECUTABLE
            write_confined(directory, art.path, c.get_blob(digest), executable)
            files[art.path] = {"revision": art.revision, "digest": digest, "mode": art.mode.value}
    manifest = {"project_id": pid, "prefix": collection.prefix, "collection_revision": collection.revision}
    manifest["files"] = files
    write_confined(directory, MANIFEST, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode())
    emit(st, manifest, lambda con: con.print(f"checked out {len(files)} file(s) into {directory}"))


def _local_files(directory: Path) -> dict[str, tuple[bytes, FileMode]]:
    """The workspace's regular files and their modes; a symlink is refused (its target is not
    uploaded)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not is_git_segment(d))
        for name in sorted(dirnames + filenames):
            path = Path(dirpath, name)
            rel = path.relative_to(directory).as_posix()
            if path.is_symlink():
                raise typer.BadParameter(f"{rel} is a symbolic link: submit files, not links")
            if name in filenames and rel != MANIFEST and path.is_file():
                executable = path.stat().st_mode & stat.S_IXUSR
                out[rel] = (path.read_bytes(), FileMode.EXECUTABLE if executable else FileMode.REGULAR)
    return out


def _changes(
    c: Client, directory: Path, manifest: dict[str, Any], project: str
) -> tuple[dict[str, str | None], dict[str, int], dict[str, FileMode]]:
    """(files, bases, modes): uploaded changed/new files and deletions, with their base
    revisions, and the written files' modes (a changed executable bit alone is a change)."""
    known: dict[str, Any] = manifest.get("files", {})
    local = _local_files(directory)
    files: dict[str, str | None] = {}
    bases: dict[str, int] = {}
    modes: dict[str, FileMode] = {}
    for path, (data, mode) in local.items():
        was = known.get(path, {})
        if was and was["digest"] == _digest(data) and was.get("mode", "regular") == mode.value:
            continue
        files[path] = c.put_blob(data).digest
        modes[path] = mode
        bases[path] = known[path]["revision"] if path in known else _base(c, path, manifest, project)
    for path, entry in known.items():
        if path not in local:
            files[path], bases[path] = None, entry["revision"]
    return files, bases, modes


def _base(c: Client, path: str, manifest: dict[str, Any], project: str) -> int:
    # A new path in a checkout must not exist yet (0); without a checkout, the current revision.
    return 0 if manifest else c.revision(path, project=project)


def _deps(
    c: Client, manifest: dict[str, Any], changed: dict[str, str | None], named: list[str], project: str
) -> dict[str, int]:
    known: dict[str, Any] = manifest.get("files", {})
    if named:
        return {p: known[p]["revision"] if p in known else c.revision(p, project=project) for p in named}
    return {p: e["revision"] for p, e in known.items() if p not in changed}


def submit(
    ctx: typer.Context,
    attempt_id: str,
    directory: Path,
    dep: Annotated[list[str] | None, typer.Option(help="declare only these read paths (repeatable)")] = None,
    collection_dep: Annotated[
        list[str] | None, typer.Option(help="declare 'everything under PREFIX/' as read (repeatable)")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Upload a directory's changed files as a candidate of your attempt.

    A git working tree from `checkout --git`: its changes against the base commit, untracked
    files included, ignored ones not; default reads: the unchanged files beside the change
    (docs/git.md)."""
    st = state(ctx, json_out)
    from studiolo.git.worktree import is_git_checkout

    if is_git_checkout(directory):
        from studiolo.git.agent import submit_git

        with st.client() as c:
            try:
                cand = submit_git(c, attempt_id, directory, dep or [], collection_dep or [])
            except ValueError as exc:
                raise typer.BadParameter(str(exc), param_hint="DIRECTORY") from exc
        emit(st, cand, lambda con: con.print(f"candidate [bold]{cand.id}[/] ({cand.digest})"))
        return
    manifest_path = directory / MANIFEST
    manifest: dict[str, Any] = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    with st.client() as c:
        project = manifest.get("project_id") or c.project_id()
        files, bases, modes = _changes(c, directory, manifest, project)
        if not files:
            raise typer.BadParameter(f"nothing changed in {directory}", param_hint="DIRECTORY")
        deps = _deps(c, manifest, files, dep or [], project)
        collections = {p: c.collection(p, project=project).revision for p in collection_dep or []}
        cand = c.submit_candidate(attempt_id, files, bases, deps, collections, modes)

    def human(con: Printer) -> None:
        con.print(f"candidate [bold]{cand.id}[/] ({cand.digest})")
        con.print(f"writes {', '.join(cand.write_set)}; declares {len(cand.file_deps)} read file(s)")

    emit(st, cand, human)


@artifact_app.command("list")
def artifact_list(
    ctx: typer.Context, prefix: str = "", project: Project = None, json_out: JsonOpt = False
) -> None:
    """List current artifacts under a prefix."""
    st = state(ctx, json_out)
    with st.client() as c:
        rows = c.artifacts(prefix, project=project)
    emit(st, rows, lambda con: con.print(table(rows, ["path", "revision", "digest"])))


@artifact_app.command("show")
def artifact_show(
    ctx: typer.Context,
    path: str,
    revision: int | None = None,
    project: Project = None,
    json_out: JsonOpt = False,
) -> None:
    """Show an artifact's revision and digest."""
    st = state(ctx, json_out)
    with st.client() as c:
        emit(st, c.artifact(path, revision, project=project))


@artifact_app.command("cat")
def artifact_cat(ctx: typer.Context, path: str, revision: int | None = None, project: Project = None) -> None:
    """Print an artifact's bytes."""
    st = state(ctx)
    with st.client() as c:
        art = c.artifact(path, revision, project=project)
        data = c.get_blob(art.digest) if art.digest else b""
    typer.echo(data.decode("utf-8", errors="replace"), nl=False)


@artifact_app.command("put")
def artifact_put(
    ctx: typer.Context,
    path: str,
    file: Annotated[Path | None, typer.Option(help="the new content; omit with --delete")] = None,
    base_revision: Annotated[int | None, typer.Option(help="default: the current revision")] = None,
    delete: bool = False,
    project: Project = None,
    json_out: JsonOpt = False,
) -> None:
    """A direct edit (compare-and-swap on the revision); not a task completion."""
    st = state(ctx, json_out)
    if (file is None) != delete:
        raise typer.BadParameter("give --file or --delete", param_hint="--file")
    with st.client() as c:
        digest = c.put_blob(file.read_bytes()).digest if file else None
        base = base_revision if base_revision is not None else c.revision(path, project=project)
        art = c.edit_artifact(path, digest, base, project=project)
    emit(st, art, lambda con: con.print(f"{art.path} is at revision {art.revision}"))


def observe(
    ctx: typer.Context,
    target: str,
    kind: Annotated[str, typer.Argument(help="e.g. deployed, healthy")],
    revision: Annotated[
        int | None, typer.Option(help="the revision observed; default: the current one (unless --digest)")
    ] = None,
    digest: Annotated[str | None, typer.Option(help="the bytes observed (sha256:…), not a revision")] = None,
    project: Project = None,
    json_out: JsonOpt = False,
) -> None:
    """Record an observation (a historical fact; it never implies it still holds)."""
    st = state(ctx, json_out)
    with st.client() as c:
        if revision is None and digest is None:
            revision = c.revision(target, project=project)
        emit(st, c.observe(target, kind, revision, digest, project=project))
