"""`studiolo git`: the project's git projection (docs/git.md). `status` says which ledger
version the branch reflects and whether it lags; `import` makes the tree at a commit of a
repository (a work tree, a bare repository or a bundle) the project's artifacts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from studiolo.faces.cli._output import Printer, escape_markup
from studiolo.faces.cli._state import JsonOpt, emit, state

__all__ = ["register"]

git_app = typer.Typer(help="The project's git repository: status, import.", no_args_is_help=True)
Project = Annotated[str | None, typer.Option("--project", "-p", help="Project id (default: the token's).")]


def register(app: typer.Typer) -> None:
    app.add_typer(git_app, name="git")
    app.command("rebase")(rebase)


def rebase(
    ctx: typer.Context,
    attempt_id: str,
    directory: Path,
    json_out: JsonOpt = False,
) -> None:
    """Merge your work tree's change onto the current published commit (git merge-tree).

    For a refused `target_base_stale` or `dependency_stale`: the work tree from `checkout
    --git` ends on the new base with your change re-applied and uncommitted (your change as
    it was is kept as a commit, printed), the manifest names the new base, and conflicts
    are listed file by file (exit 1), their files holding git's conflict markers. Then
    verify and `submit` again."""
    from studiolo.git.agent import rebase_git

    st = state(ctx, json_out)
    with st.client() as c:
        attempt = c.attempt(attempt_id)
        if attempt.status != "active":
            raise typer.BadParameter(f"attempt {attempt_id} is {attempt.status}", param_hint="ATTEMPT")
        done = rebase_git(c, st.settings.token, directory)
    out = {"base_commit": done.base, "conflicts": done.conflicts, "before": done.ours}

    def human(p: Printer) -> None:
        p.print(f"on {done.base} (your change before: {done.ours})")
        for path in done.conflicts:
            p.print(escape_markup(f"conflict: {path}"))

    emit(st, out, human)
    if done.conflicts:
        raise typer.Exit(1)


mirror_app = typer.Typer(help="Mirrors: remotes every publication is pushed to.", no_args_is_help=True)
git_app.add_typer(mirror_app, name="mirror")


@mirror_app.command("add")
def mirror_add(ctx: typer.Context, url: str, project: Project = None, json_out: JsonOpt = False) -> None:
    """Push every publication (branch, notes, checkpoints) to URL too, retried with backoff."""
    st = state(ctx, json_out)
    with st.client() as c:
        out = c.git_mirror(url, project=project)
    emit(st, out, lambda p: p.print(escape_markup(f"mirror {out.name}: {out.url}")))


@git_app.command("status")
def status(ctx: typer.Context, project: Project = None, json_out: JsonOpt = False) -> None:
    """The branch's commit, the ledger version it reflects, and whether it lags."""
    st = state(ctx, json_out)
    with st.client() as c:
        out = c.git_status(project=project)

    def human(p: Printer) -> None:
        if out.commit is None:
            p.print(f"{out.branch}: nothing published yet ({out.pending} pending)")
            return
        where = "current" if out.current else f"lags the ledger by {out.pending} change(s)"
        p.print(f"{out.branch} at {out.commit}: ledger version {out.published_version}, {where}")
        if not out.current:
            p.print(f"the ledger's last change to the artifacts is version {out.ledger_version}")
        for m in out.mirrors:
            state_ = f"error: {m.error}" if m.error else f"holds version {m.pushed_version}"
            p.print(escape_markup(f"mirror {m.url}: {state_}"))

    emit(st, out, human)


@git_app.command("import")
def import_(
    ctx: typer.Context,
    repo: Annotated[str, typer.Argument(help="a git work tree, bare repository or bundle file")],
    ref: Annotated[str, typer.Option(help="the branch, tag or commit to import")] = "HEAD",
    project: Project = None,
    skip_unsupported: Annotated[
        bool, typer.Option(help="skip (and list) symlinks, submodules and refused paths instead of failing")
    ] = False,
    max_file_bytes: Annotated[int, typer.Option(help="the largest file to import")] = 8 * 1024 * 1024,
    json_out: JsonOpt = False,
) -> None:
    """Make the tree at REF the project's artifacts in one audited edit (exec bits kept).

    Every entry Studiolo cannot hold is listed in one error before anything is uploaded:
    symlinks, submodules, paths the normalizer refuses, two spellings of one path, a path
    that is both a file and a directory, files over the limit. `--skip-unsupported` imports
    the rest and lists what it skipped."""
    from studiolo.faces.cli._git_import import run_import

    st = state(ctx, json_out)
    with st.client() as c:
        result = run_import(c, repo, ref, project, skip_unsupported, max_file_bytes, quiet=st.json)
    emit(st, result, lambda p: _imported(p, result))


def _imported(p: Printer, result: dict[str, object]) -> None:
    p.print(
        f"imported {result['commit']} ({result['files']} files): {result['written']} written,"
        f" {result['deleted']} deleted, {result['unchanged']} unchanged; ledger version {result['version']}"
    )
    skipped = result.get("skipped")
    for path, why in skipped if isinstance(skipped, list) else []:
        p.print(escape_markup(f"skipped {path!r}: {why}"))
