"""Delegating tasks to remote A2A agents: trust anchors (`remote-org`), delegations and the
operator review queue (`delegate`). docs/a2a.md, "Delegating to a remote agent"."""

from __future__ import annotations

from typing import Annotated

import typer

from studiolo.faces.cli._output import Printer
from studiolo.faces.cli._state import JsonOpt, emit, state, table

__all__ = ["register"]

org_app = typer.Typer(help="Remote organisations: the keys pinned for their agents.", no_args_is_help=True)
delegate_app = typer.Typer(
    help="Delegate tasks to remote A2A agents; the review queue of indeterminate outcomes.",
    no_args_is_help=True,
)

Project = Annotated[str | None, typer.Option("--project", "-p", help="Project id (default: the token's).")]
Note = Annotated[str, typer.Option(help="what the operator checked (audited)")]
_COLUMNS = ["id", "task_id", "state", "remote_state", "reason"]


def register(app: typer.Typer) -> None:
    app.add_typer(org_app, name="remote-org")
    app.add_typer(delegate_app, name="delegate")


_ORIGIN_HELP = (
    "scheme://host[:port] the service may send requests to; repeatable. A loopback, link-local "
    "or private address only when named as such (an IP literal, or localhost)"
)


def _keys(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        kid, sep, key = pair.partition("=")
        if not sep or not kid or not key:
            raise typer.BadParameter(f"expected KID=PUBLIC_KEY, got {pair!r}")
        out[kid] = key
    return out


@org_app.command("add")
def org_add(
    ctx: typer.Context,
    name: str,
    key: Annotated[list[str], typer.Option("--key", help="KID=Ed25519 public key (base64url); repeatable")],
    target: Annotated[str | None, typer.Option(help="directory its results land under")] = None,
    origin: Annotated[list[str] | None, typer.Option("--origin", help=_ORIGIN_HELP)] = None,
    project: Project = None,
    json_out: JsonOpt = False,
) -> None:
    """Pin a remote organisation's signing keys (no trust on first use) and its origins."""
    st = state(ctx, json_out)
    with st.client() as c:
        org = c.add_remote_org(name, _keys(key), target=target, origins=origin or [], project=project)

    def human(con: Printer) -> None:
        con.print(f"pinned {len(org.keys)} key(s) for [bold]{org.name}[/] ({org.id})")
        con.print(f"contracts name the checker [bold]{org.checker}[/]; results land under {org.target}")

    emit(st, org, human)


@org_app.command("origins")
def org_origins(
    ctx: typer.Context,
    name: str,
    origin: Annotated[list[str], typer.Option("--origin", help=_ORIGIN_HELP)],
    project: Project = None,
    json_out: JsonOpt = False,
) -> None:
    """Replace the origins the service may send requests to for an organisation."""
    st = state(ctx, json_out)
    with st.client() as c:
        org = c.set_remote_origins(name, origin, project=project)
    emit(st, org, lambda con: con.print(f"[bold]{org.name}[/]: {', '.join(org.origins)}"))


@org_app.command("list")
def org_list(ctx: typer.Context, project: Project = None, json_out: JsonOpt = False) -> None:
    """The project's remote organisations."""
    st = state(ctx, json_out)
    with st.client() as c:
        rows = c.remote_orgs(project)
    emit(st, rows, lambda con: con.print(table(rows, ["id", "name", "checker", "target", "keys"])))


@org_app.command("revoke")
def org_revoke(ctx: typer.Context, name: str, project: Project = None, json_out: JsonOpt = False) -> None:
    """Stop trusting an organisation: its grants are revoked; results in flight are refused."""
    st = state(ctx, json_out)
    with st.client() as c:
        org = c.revoke_remote_org(name, project=project)
    emit(st, org, lambda con: con.print(f"revoked [bold]{org.name}[/] ({org.id})"))


@delegate_app.command("task")
def delegate_task(
    ctx: typer.Context,
    task_id: str,
    org: Annotated[str, typer.Option(help="the remote organisation (its pinned keys)")],
    url: Annotated[str, typer.Option(help="the remote agent's base URL (its Agent Card)")],
    skill: Annotated[str | None, typer.Option(help="the remote skill id")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Delegate a task: the card is verified with the pinned keys; the service does the rest."""
    st = state(ctx, json_out)
    with st.client() as c:
        d = c.delegate(task_id, org, url, skill)
    emit(st, d, lambda con: con.print(f"delegated {d.task_id} as [bold]{d.id}[/]: {d.state}"))


@delegate_app.command("show")
def delegate_show(ctx: typer.Context, delegation_id: str, json_out: JsonOpt = False) -> None:
    """A delegation: its state, the remote's, and the evidence kept."""
    st = state(ctx, json_out)
    with st.client() as c:
        emit(st, c.delegation(delegation_id))


@delegate_app.command("list")
def delegate_list(
    ctx: typer.Context,
    state_name: Annotated[str | None, typer.Option("--state", help="only this state")] = None,
    project: Project = None,
    json_out: JsonOpt = False,
) -> None:
    """The project's delegations."""
    st = state(ctx, json_out)
    with st.client() as c:
        rows = c.delegations(state_name, project=project)
    emit(st, rows, lambda con: con.print(table(rows, _COLUMNS)))


@delegate_app.command("review")
def delegate_review(ctx: typer.Context, project: Project = None, json_out: JsonOpt = False) -> None:
    """The review queue: indeterminate delegations waiting for an operator."""
    st = state(ctx, json_out)
    with st.client() as c:
        rows = c.review_queue(project)
    emit(st, rows, lambda con: con.print(table(rows, _COLUMNS, title="indeterminate")))


@delegate_app.command("finalize")
def delegate_finalize(
    ctx: typer.Context, delegation_id: str, note: Note = "", json_out: JsonOpt = False
) -> None:
    """Complete an indeterminate delegation with the artifacts that verified (the contract still applies)."""
    st = state(ctx, json_out)
    with st.client() as c:
        d = c.review(delegation_id, "finalize", note)
    emit(st, d, lambda con: con.print(f"{d.id}: [bold]{d.state}[/] {d.reason or ''}"))


@delegate_app.command("reject")
def delegate_reject(
    ctx: typer.Context, delegation_id: str, note: Note = "", json_out: JsonOpt = False
) -> None:
    """Reject an indeterminate delegation: nothing is published, the task is open again."""
    st = state(ctx, json_out)
    with st.client() as c:
        d = c.review(delegation_id, "reject", note)
    emit(st, d, lambda con: con.print(f"{d.id}: [bold]{d.state}[/]"))
