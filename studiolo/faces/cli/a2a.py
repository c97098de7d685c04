"""A2A admin commands: the intake templates through which other organisations' agents
delegate work to a project (docs/a2a.md). The requester supplies a description and inputs;
the template fixes the contract: criteria, scope, and optionally the policy version."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from studiolo.faces.cli._state import JsonOpt, emit, state

__all__ = ["register"]

a2a_app = typer.Typer(help="A2A: intake templates for work delegated by other agents.", no_args_is_help=True)
intake_app = typer.Typer(
    help="Intake templates: the contract of every task delegated through one (project admins).",
    no_args_is_help=True,
)
a2a_app.add_typer(intake_app, name="intake")

Project = Annotated[str | None, typer.Option("--project", "-p", help="Project id (default: the token's).")]


def register(app: typer.Typer) -> None:
    app.add_typer(a2a_app, name="a2a")


@intake_app.command("put")
def intake_put(
    ctx: typer.Context,
    name: Annotated[
        str, typer.Argument(help="the template's name (its Agent Card skill is <project>/<name>)")
    ],
    criterion: Annotated[
        list[str], typer.Option(help="NAME=CHECKER@VERSION, e.g. tests=unit@1 (repeatable)")
    ],
    scope: Annotated[
        list[str], typer.Option(help="a path pattern the task may write, e.g. 'src/**' (repeatable)")
    ],
    description: Annotated[str, typer.Option(help="what the template is for (shown on the card)")] = "",
    policy_version: Annotated[
        int | None,
        typer.Option(help="pin this policy version (default: the latest when each task is created)"),
    ] = None,
    project: Project = None,
    json_out: JsonOpt = False,
) -> None:
    """Define or replace an intake template (audited). Tasks created earlier keep their contract."""
    st = state(ctx, json_out)
    criteria = dict(_criterion(c) for c in criterion)
    with st.client() as c:
        t = c.define_intake(
            name, criteria, scope, description=description, policy_version=policy_version, project=project
        )
    emit(st, t, lambda con: con.print(f"intake {t['name']}: skill {t['skill']}", highlight=False))


@intake_app.command("list")
def intake_list(ctx: typer.Context, project: Project = None, json_out: JsonOpt = False) -> None:
    """List the project's intake templates."""
    st = state(ctx, json_out)
    with st.client() as c:
        rows = c.intakes(project)
    emit(st, rows, lambda con: con.print(_lines(rows), highlight=False, soft_wrap=True))


def _criterion(text: str) -> tuple[str, str]:
    name, sep, ref = text.partition("=")
    if not sep or not name or "@" not in ref:
        raise typer.BadParameter(f"{text!r}: use NAME=CHECKER@VERSION", param_hint="--criterion")
    return name, ref


def _lines(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no intake templates"
    out = []
    for r in rows:
        criteria = ", ".join(f"{k}={v}" for k, v in sorted(dict(r.get("criteria") or {}).items()))
        version = r.get("policy_version")
        policy = "the latest policy" if version is None else f"policy v{version}"
        out.append(f"{r['skill']}: {criteria} · scope {' '.join(r.get('scope') or [])} · {policy}")
        if r.get("description"):
            out.append(f"  {r['description']}")
    return "\n".join(out)
