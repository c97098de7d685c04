"""Worker commands: who am I, orientation, tasks, attempts, handoffs, events."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from studiolo.api import responses as s
from studiolo.faces.cli._output import Printer, printer
from studiolo.faces.cli._state import JsonOpt, emit, state, table

__all__ = ["register"]

task_app = typer.Typer(help="Tasks: list, show, create, cancel, migrate, reassign.", no_args_is_help=True)

Project = Annotated[str | None, typer.Option("--project", "-p", help="Project id (default: the token's).")]
Lease = Annotated[float | None, typer.Option("--lease", help="lease seconds (default: the server's)")]
_TASK_COLUMNS = ["id", "title", "status", "fact", "fence"]


def register(app: typer.Typer) -> None:
    app.add_typer(task_app, name="task")
    for fn in (whoami, orient, claim, heartbeat, release, handoff, events):
        app.command(fn.__name__)(fn)


def whoami(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """Show the principal your token authenticates as."""
    st = state(ctx, json_out)
    with st.client() as c:
        emit(st, c.me())


def orient(ctx: typer.Context, project: Project = None, json_out: JsonOpt = False) -> None:
    """What to read first: the policy, your grants, the open tasks, your attempts."""
    st = state(ctx, json_out)
    with st.client() as c:
        o = c.orientation(project)

    def human(con: Printer) -> None:
        con.print(f"[bold]{o.principal.name}[/] ({o.principal.kind}) in {o.project_id}")
        if o.policy:
            con.print(f"policy v{o.policy.version}: {o.policy.text}")
        con.print(table(o.grants, ["actions", "scope"], title="your grants"))
        con.print(table(o.open_tasks, ["id", "title"], title="open tasks"))
        con.print(table(o.my_attempts, ["id", "task_id", "fence", "lease_deadline"], title="your attempts"))

    emit(st, o, human)


@task_app.command("list")
def task_list(
    ctx: typer.Context,
    status: Annotated[str | None, typer.Option(help="open, claimed, completed or cancelled")] = None,
    limit: int = 200,
    project: Project = None,
    json_out: JsonOpt = False,
) -> None:
    """List tasks with their strongest established fact."""
    st = state(ctx, json_out)
    with st.client() as c:
        rows = c.tasks(status, limit, project=project)
    emit(st, rows, lambda con: con.print(table(rows, _TASK_COLUMNS)))


@task_app.command("show")
def task_show(ctx: typer.Context, task_id: str, json_out: JsonOpt = False) -> None:
    """Show a task: contract, fact, attempts, candidates, receipts, completion, rejections."""
    st = state(ctx, json_out)
    with st.client() as c:
        v = c.task(task_id)
    emit(st, v, lambda con: _show_task(con, v))


def _show_task(con: Printer, v: s.TaskViewOut) -> None:
    t = v.task
    current = "" if t.still_current is None else f" (still current: {t.still_current})"
    con.print(f"[bold]{t.title}[/] {t.id}\nstatus {t.status} · fact [bold]{t.fact}[/]{current}")
    con.print(f"contract {t.contract_hash} · policy v{t.contract.policy_version}")
    con.print(f"criteria {json.dumps(t.contract.criteria)} · scope {', '.join(t.contract.scope)}")
    con.print(table(v.attempts, ["id", "principal_id", "fence", "status"], title="attempts"))
    con.print(table(v.candidates, ["id", "attempt_id", "write_set"], title="candidates"))
    if v.completion:
        con.print(f"completed: commit version {v.completion.commit_version}, {v.completion.id}")
    for e in v.rejections:
        con.print(f"[red]rejected[/] {e.data.get('failed')} (request {e.data.get('request_id')})")
    if t.bytes_deleted:
        con.print(f"[yellow]still current and re-verification impossible:[/] {t.bytes_deleted}")
    for d in v.deleted:
        con.print(f"  {d.digest} ({', '.join(d.paths) or d.subject}): {d.text}")


@task_app.command("create")
def task_create(
    ctx: typer.Context,
    title: str,
    criterion: Annotated[list[str], typer.Option(help="criterion=checker@version (repeatable)")],
    scope: Annotated[list[str], typer.Option(help="path pattern the task may write (repeatable)")],
    description: str = "",
    policy_version: Annotated[int | None, typer.Option(help="default: the latest")] = None,
    requires_deployment: bool = False,
    allow_evidence_reuse: Annotated[
        bool, typer.Option(help="the worker may reuse a receipt issued for another task or attempt (audited)")
    ] = False,
    separate_verdict: Annotated[
        list[str] | None,
        typer.Option(help="a criterion whose passes must come from where the code never ran (repeatable)"),
    ] = None,
    project: Project = None,
    json_out: JsonOpt = False,
) -> None:
    """Create a task and pin its contract (every field of `TaskIn`, the HTTP request's model)."""
    st = state(ctx, json_out)
    criteria = dict(c.split("=", 1) for c in criterion if "=" in c)
    if len(criteria) != len(criterion):
        raise typer.BadParameter("use --criterion ID=CHECKER@VERSION", param_hint="--criterion")
    with st.client() as c:
        t = c.create_task(
            title,
            criteria=criteria,
            scope=scope,
            description=description,
            policy_version=policy_version,
            requires_deployment=requires_deployment,
            allow_evidence_reuse=allow_evidence_reuse,
            separate_verdict=separate_verdict or (),
            project=project,
        )
    emit(st, t, lambda con: con.print(f"created {t.id} (contract {t.contract_hash})"))


@task_app.command("cancel")
def task_cancel(ctx: typer.Context, task_id: str, reason: str = "", json_out: JsonOpt = False) -> None:
    """Cancel a task (an audited transition)."""
    st = state(ctx, json_out)
    with st.client() as c:
        t = c.cancel(task_id, reason)
    emit(st, t, lambda con: con.print(f"{t.id} is {t.status}"))


@task_app.command("migrate")
def task_migrate(
    ctx: typer.Context,
    task_id: str,
    criterion: Annotated[list[str] | None, typer.Option(help="criterion=checker@version")] = None,
    scope: Annotated[list[str] | None, typer.Option(help="path pattern (repeatable)")] = None,
    policy_version: int | None = None,
    separate_verdict: Annotated[
        list[str] | None,
        typer.Option(help="the criteria whose passes must come from where the code never ran (replaces)"),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Change a task's contract explicitly (it gets a new hash); what is not given is kept."""
    st = state(ctx, json_out)
    criteria = dict(c.split("=", 1) for c in criterion) if criterion else None
    with st.client() as c:
        t = c.migrate(
            task_id,
            criteria=criteria,
            scope=scope,
            policy_version=policy_version,
            separate_verdict=separate_verdict,
        )
    emit(st, t, lambda con: con.print(f"{t.id} now has contract {t.contract_hash}"))


@task_app.command("reassign")
def task_reassign(
    ctx: typer.Context, task_id: str, principal_id: str, lease: Lease = None, json_out: JsonOpt = False
) -> None:
    """Replace the current attempt with a new one for another principal."""
    st = state(ctx, json_out)
    with st.client() as c:
        a = c.reassign(task_id, principal_id, lease)
    emit(st, a, lambda con: con.print(f"attempt {a.id} (fence {a.fence}) for {a.principal_id}"))


def claim(ctx: typer.Context, task_id: str, lease: Lease = None, json_out: JsonOpt = False) -> None:
    """Claim a task: start an attempt with a lease and a fence."""
    st = state(ctx, json_out)
    with st.client() as c:
        contract_hash = c.task(task_id).task.contract_hash  # read first: a migration between fails safe
        a = c.claim(task_id, lease)
    st.remember_contract(a.id, task_id, contract_hash)  # what `complete` sends
    emit(
        st, a, lambda con: con.print(f"attempt {a.id} · fence {a.fence} · lease until {a.lease_deadline:.0f}")
    )


def heartbeat(ctx: typer.Context, attempt_id: str, lease: Lease = None, json_out: JsonOpt = False) -> None:
    """Extend the lease of your live attempt."""
    st = state(ctx, json_out)
    with st.client() as c:
        a = c.heartbeat(attempt_id, lease)
    emit(st, a, lambda con: con.print(f"lease until {a.lease_deadline:.0f}"))


def release(ctx: typer.Context, attempt_id: str, json_out: JsonOpt = False) -> None:
    """Give the task back: it becomes open again."""
    st = state(ctx, json_out)
    with st.client() as c:
        a = c.release(attempt_id)
    emit(st, a, lambda con: con.print(f"attempt {a.id} is {a.status}"))


def handoff(
    ctx: typer.Context,
    attempt_id: str,
    artifact: Annotated[list[str] | None, typer.Option(help="path=revision you relied on")] = None,
    obligation: Annotated[list[str] | None, typer.Option(help="an open obligation (repeatable)")] = None,
    notes: str = "",
    json_out: JsonOpt = False,
) -> None:
    """Leave references to authority for a successor."""
    st = state(ctx, json_out)
    arts = {p: int(r) for p, r in (a.rsplit("=", 1) for a in artifact or [])}
    with st.client() as c:
        h = c.handoff(attempt_id, artifacts=arts, obligations=obligation or [], notes=notes)
    emit(st, h, lambda con: con.print(f"handoff {h.id} left for task {h.task_id}"))


def events(
    ctx: typer.Context,
    after: int = 0,
    limit: int = 200,
    follow: Annotated[bool, typer.Option(help="keep streaming new events (Server-Sent Events)")] = False,
    timeout: Annotated[float, typer.Option(help="with --follow: stop after this many seconds")] = 3600.0,
    project: Project = None,
    json_out: JsonOpt = False,
) -> None:
    """The project's audit events; `--follow` streams them as they happen."""
    st = state(ctx, json_out)
    with st.client() as c:
        if not follow:
            rows = c.events(after, limit, project=project)
            emit(st, rows, lambda con: con.print(table(rows, ["seq", "kind", "actor", "subject"])))
            return
        con = printer(soft_wrap=True)  # one line per event, as it arrives
        for e in c.stream_events(after, timeout=timeout, project=project):
            if st.json:
                typer.echo(e.model_dump_json())
            else:
                con.print(f"{e.seq:>6} {e.kind:<22} {e.subject or ''}", highlight=False)
