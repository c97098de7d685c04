"""Admin commands: projects, principals and tokens, grants, policies, checkers, blobs."""

from __future__ import annotations

from typing import Annotated

import typer

from studiolo.core.enums import Action, PrincipalKind
from studiolo.faces.cli._output import Printer
from studiolo.faces.cli._state import JsonOpt, emit, state, table

__all__ = ["register"]

project_app = typer.Typer(help="Projects (service admins create them).", no_args_is_help=True)
principal_app = typer.Typer(help="Principals and their tokens.", no_args_is_help=True)
grant_app = typer.Typer(help="Grants: actions over path scopes; revocable.", no_args_is_help=True)
policy_app = typer.Typer(help="Policies: the project's versioned handbook.", no_args_is_help=True)
checker_app = typer.Typer(help="Checkers and the verifiers admitted for them.", no_args_is_help=True)
blob_app = typer.Typer(
    help="Blobs: delete the ones nothing references (service admins).", no_args_is_help=True
)

Project = Annotated[str | None, typer.Option("--project", "-p", help="Project id (default: the token's).")]


def register(app: typer.Typer) -> None:
    app.add_typer(project_app, name="project")
    app.add_typer(principal_app, name="principal")
    app.add_typer(grant_app, name="grant")
    app.add_typer(policy_app, name="policy")
    app.add_typer(checker_app, name="checker")
    app.add_typer(blob_app, name="blob")


@project_app.command("create")
def project_create(ctx: typer.Context, name: str, json_out: JsonOpt = False) -> None:
    """Create a project."""
    st = state(ctx, json_out)
    with st.client() as c:
        emit(st, c.create_project(name))


@project_app.command("list")
def project_list(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """List the projects you can see."""
    st = state(ctx, json_out)
    with st.client() as c:
        rows = c.projects()
    emit(st, rows, lambda con: con.print(table(rows, ["id", "name"])))


@principal_app.command("add")
def principal_add(
    ctx: typer.Context,
    name: str,
    kind: Annotated[PrincipalKind, typer.Option(help="what the principal is")] = PrincipalKind.AGENT,
    public_key: Annotated[str | None, typer.Option(help="a verifier's Ed25519 key, base64url")] = None,
    project: Project = None,
    json_out: JsonOpt = False,
) -> None:
    """Add a principal. Its bearer token is printed once: store it now."""
    st = state(ctx, json_out)
    with st.client() as c:
        issued = c.add_principal(name, kind, public_key, project=project)

    def human(con: Printer) -> None:
        con.print(f"added {issued.principal.kind} [bold]{name}[/] ({issued.principal.id})")
        con.print(f"token (shown once): [bold]{issued.token}[/]", soft_wrap=True)

    emit(st, issued, human)


@principal_app.command("list")
def principal_list(ctx: typer.Context, project: Project = None, json_out: JsonOpt = False) -> None:
    """List a project's principals."""
    st = state(ctx, json_out)
    with st.client() as c:
        rows = c.principals(project)
    emit(st, rows, lambda con: con.print(table(rows, ["id", "name", "kind"])))


@principal_app.command("rotate-token")
def principal_rotate(ctx: typer.Context, principal_id: str, json_out: JsonOpt = False) -> None:
    """Revoke every token of a principal and issue a new one (printed once)."""
    st = state(ctx, json_out)
    with st.client() as c:
        issued = c.rotate_token(principal_id)
    emit(st, issued, lambda con: con.print(f"new token (shown once): {issued.token}", soft_wrap=True))


@principal_app.command("revoke-tokens")
def principal_revoke(ctx: typer.Context, principal_id: str, json_out: JsonOpt = False) -> None:
    """Revoke every token of a principal."""
    st = state(ctx, json_out)
    with st.client() as c:
        n = c.revoke_tokens(principal_id)
    emit(st, {"revoked": n}, lambda con: con.print(f"revoked {n} token(s)"))


@principal_app.command("reconfirm")
def principal_reconfirm(ctx: typer.Context, principal_id: str, json_out: JsonOpt = False) -> None:
    """Vouch for the tokens and verifier admissions a restore held (audited).

    `studiolo restore` lists the principals that need it; the service admins' own come back
    with `studiolo reconfirm` on the ledger's host.
    """
    st = state(ctx, json_out)
    with st.client() as c:
        out = c.reconfirm(principal_id)

    def human(con: Printer) -> None:
        if out.event_seq is None:
            con.print("nothing of this principal was held")
            return
        con.print(f"reconfirmed {len(out.tokens)} token(s), admissions {out.admissions or 'none'}")
        con.print(f"vouched for grants {out.grants or 'none'}; key {out.key_id or 'none'}")

    emit(st, out, human)


@principal_app.command("set-key")
def principal_set_key(
    ctx: typer.Context, principal_id: str, public_key: str, json_out: JsonOpt = False
) -> None:
    """Register a verifier's Ed25519 public key (base64url).

    A key that starts with `-` goes after `--`: `studiolo principal set-key -- ID KEY`.
    """
    st = state(ctx, json_out)
    with st.client() as c:
        emit(st, c.set_public_key(principal_id, public_key))


@grant_app.command("add")
def grant_add(
    ctx: typer.Context,
    principal_id: str,
    actions: Annotated[
        str, typer.Option(help="comma-separated: read,write,claim,complete,verify,observe,admin,delegate")
    ],
    scope: Annotated[list[str] | None, typer.Option(help="path pattern (repeatable); default **")] = None,
    project: Project = None,
    json_out: JsonOpt = False,
) -> None:
    """Grant actions over a scope to a principal."""
    st = state(ctx, json_out)
    with st.client() as c:
        g = c.grant(
            principal_id,
            _actions(actions),
            scope or ["**"],
            project=project,
        )
    emit(st, g)


def _actions(text: str) -> list[Action]:
    try:
        return [Action(a.strip()) for a in text.split(",") if a.strip()]
    except ValueError as exc:
        raise typer.BadParameter(f"{exc}; use {','.join(Action)}", param_hint="--actions") from exc


_GRANT_COLUMNS = ["id", "principal_id", "actions", "scope", "live"]


@grant_app.command("list")
def grant_list(ctx: typer.Context, project: Project = None, json_out: JsonOpt = False) -> None:
    """List grants (all of them for admins, else your own)."""
    st = state(ctx, json_out)
    with st.client() as c:
        rows = c.grants(project)
    emit(st, rows, lambda con: con.print(table(rows, _GRANT_COLUMNS)))


@grant_app.command("revoke")
def grant_revoke(ctx: typer.Context, grant_id: str, json_out: JsonOpt = False) -> None:
    """Revoke a grant. Completions committed before it stay; later ones are rejected."""
    st = state(ctx, json_out)
    with st.client() as c:
        emit(st, c.revoke_grant(grant_id))


@policy_app.command("publish")
def policy_publish(
    ctx: typer.Context,
    text: Annotated[str | None, typer.Option(help="the handbook text")] = None,
    file: Annotated[
        typer.FileText | None, typer.Option(help="read the text from a file ('-': stdin)")
    ] = None,
    project: Project = None,
    json_out: JsonOpt = False,
) -> None:
    """Publish a new default policy. Tasks pinned to older versions keep theirs."""
    st = state(ctx, json_out)
    body = text if text is not None else (file.read() if file else "")
    with st.client() as c:
        p = c.publish_policy(body, project=project)
    emit(st, p, lambda con: con.print(f"published policy v{p.version} ({p.digest})"))


@policy_app.command("list")
def policy_list(ctx: typer.Context, project: Project = None, json_out: JsonOpt = False) -> None:
    """List every policy version."""
    st = state(ctx, json_out)
    with st.client() as c:
        rows = c.policies(project)
    emit(st, rows, lambda con: con.print(table(rows, ["version", "digest", "text"])))


@checker_app.command("add")
def checker_add(
    ctx: typer.Context,
    ref: Annotated[str, typer.Argument(help="name@version")],
    verifier: Annotated[
        list[str] | None, typer.Option(help="admitted verifier principal id (repeatable)")
    ] = None,
    kind: str = "command",
    argv: Annotated[str | None, typer.Option(help="for command checkers: the command line")] = None,
    project: Project = None,
    json_out: JsonOpt = False,
) -> None:
    """Admit a checker version and the verifiers that may report for it."""
    st = state(ctx, json_out)
    name, _, version = ref.partition("@")
    config = {"argv": argv.split()} if argv else {}
    with st.client() as c:
        emit(st, c.register_checker(name, version, kind, config, verifier or [], project=project))


@checker_app.command("list")
def checker_list(ctx: typer.Context, project: Project = None, json_out: JsonOpt = False) -> None:
    """List admitted checkers."""
    st = state(ctx, json_out)
    with st.client() as c:
        rows = c.checkers(project)
    emit(st, rows, lambda con: con.print(table(rows, ["ref", "kind", "verifiers"])))


@blob_app.command("gc")
def blob_gc(
    ctx: typer.Context,
    older_than: Annotated[
        float, typer.Option(min=0, help="spare blobs staged within this many seconds (a submit in flight)")
    ] = 3600.0,
    json_out: JsonOpt = False,
) -> None:
    """Delete the blobs no artifact revision, candidate, receipt or delegation references (audited)."""
    st = state(ctx, json_out)
    with st.client() as c:
        n = c.collect_garbage(older_than)
    emit(st, {"collected": n}, lambda con: con.print(f"collected {n} blob(s)"))
