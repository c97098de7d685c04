"""`studiolo admin`: evidence retention, legal holds and deletion of bytes on request
(docs/operations.md, "Retention and deletion")."""

from __future__ import annotations

from typing import Annotated

import typer

from studiolo.faces.cli._output import Printer
from studiolo.faces.cli._state import JsonOpt, emit, state, table

__all__ = ["register"]

admin_app = typer.Typer(
    help="Evidence retention, legal holds, deletion of bytes on request (project admins).",
    no_args_is_help=True,
)
retention_app = typer.Typer(help="Retention periods and sweeps.", no_args_is_help=True)
hold_app = typer.Typer(help="Legal holds on a task or a project.", no_args_is_help=True)

Project = Annotated[str | None, typer.Option("--project", "-p", help="Project id (default: the token's).")]
Reason = Annotated[str, typer.Option("--reason", help="why (recorded in the audit event)")]
Period = Annotated[float | None, typer.Option(min=0, help="seconds to keep")]


def register(app: typer.Typer) -> None:
    app.add_typer(admin_app, name="admin")
    admin_app.add_typer(retention_app, name="retention")
    admin_app.add_typer(hold_app, name="hold")


@retention_app.command("show")
def retention_show(ctx: typer.Context, project: Project = None, json_out: JsonOpt = False) -> None:
    """The project's retention periods, live holds and latest deleted bytes."""
    st = state(ctx, json_out)
    with st.client() as c:
        out = c.retention(project=project)

    def show(con: Printer) -> None:
        p = out.policy
        con.print(
            f"candidates {p.candidates}  verifier_logs {p.verifier_logs}  delegations {p.delegations}"
            f"  audit_detail {p.audit_detail} (s)"
        )
        con.print(table(out.holds, ["id", "task_id", "reason", "placed_by"]))
        for t in out.deleted:
            con.print(f"{t.digest}  {', '.join(t.paths)}  {t.text}")

    emit(st, out, show)


@retention_app.command("set")
def retention_set(
    ctx: typer.Context,
    candidates: Period = None,
    verifier_logs: Period = None,
    delegations: Period = None,
    audit_detail: Period = None,
    forever: Annotated[
        list[str] | None, typer.Option(help="a kind to keep for ever again (repeatable)")
    ] = None,
    project: Project = None,
    json_out: JsonOpt = False,
) -> None:
    """Change retention periods (seconds); a kind not named keeps its period."""
    given = {
        "candidates": candidates,
        "verifier_logs": verifier_logs,
        "delegations": delegations,
        "audit_detail": audit_detail,
    }
    periods: dict[str, float | None] = {k: v for k, v in given.items() if v is not None}
    periods.update(dict.fromkeys(forever or [], None))
    st = state(ctx, json_out)
    with st.client() as c:
        emit(st, c.set_retention(periods, project=project))


@retention_app.command("sweep")
def retention_sweep(
    ctx: typer.Context,
    project: Annotated[
        str | None, typer.Option("--project", "-p", help="one project (default: every one)")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Delete what is past its retention period now (every project: service admins)."""
    st = state(ctx, json_out)
    with st.client() as c:
        rows = c.sweep_retention(project)
    emit(st, rows, lambda con: con.print(table(rows, ["project_id", "swept", "blobs", "bytes"])))


@hold_app.command("place")
def hold_place(
    ctx: typer.Context,
    reason: Reason,
    task: Annotated[str | None, typer.Option(help="the task held (default: the whole project)")] = None,
    project: Project = None,
    json_out: JsonOpt = False,
) -> None:
    """Hold a task's (or the project's) evidence: nothing it covers expires or is deleted."""
    st = state(ctx, json_out)
    with st.client() as c:
        emit(st, c.place_hold(reason, task, project=project))


@hold_app.command("release")
def hold_release(ctx: typer.Context, hold_id: str, reason: Reason, json_out: JsonOpt = False) -> None:
    """Release a legal hold."""
    st = state(ctx, json_out)
    with st.client() as c:
        emit(st, c.release_hold(hold_id, reason))


@admin_app.command("delete-bytes")
def delete_bytes(
    ctx: typer.Context,
    digest: Annotated[
        str, typer.Argument(help="sha256:… of the bytes (an artifact revision's, a candidate's)")
    ],
    reason: Reason,
    project: Project = None,
    json_out: JsonOpt = False,
) -> None:
    """Delete bytes on request (a secret committed by mistake), leaving a tombstone; audited."""
    st = state(ctx, json_out)
    with st.client() as c:
        out = c.delete_bytes(digest, reason, project=project)
    emit(st, out, lambda con: con.print(f"{out.digest} ({out.size} bytes): {out.text}"))
