"""``studiolo a2a-study``: the quiescence simulation (issue 13), or a check of a results file.

A thin face: parse the options, call :mod:`studiolo.a2a_study`, render with Rich. The last
line printed is always the JSON summary (with ``--json``, the only line).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from studiolo.a2a_study import (
    DEFAULT_SEED,
    DEFAULT_TASKS,
    StudyResult,
    check_results,
    render_results,
    run_study,
    shape,
    summary,
    summary_line,
)

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the ``a2a-study`` command to ``app``."""
    app.command("a2a-study")(a2a_study)


def a2a_study(
    seed: Annotated[int, typer.Option(help="The simulated world's seed.", min=0)] = DEFAULT_SEED,
    tasks: Annotated[int, typer.Option(help="Delegations to simulate.", min=1)] = DEFAULT_TASKS,
    as_json: Annotated[bool, typer.Option("--json", help="Print only the JSON summary line.")] = False,
    out: Annotated[
        Path | None,
        typer.Option(help="Also write the full results file (parameters included).", dir_okay=False),
    ] = None,
    check: Annotated[
        Path | None,
        typer.Option(
            help="Recompute a results file's seed and task count and compare byte for byte.",
            dir_okay=False,
            metavar="RESULTS",
        ),
    ] = None,
) -> None:
    """Simulate A2A delegations: a requester that trusts the terminal state beside the quiescence check.

    Every remote task is drawn from the seed on a virtual clock: some deliver a large artifact
    on a detached channel after their terminal state, a few never deliver it, a few are
    tampered with. Exit 1 if the quiescence requester ever finalizes early or finalizes
    tampered work.
    """
    console = Console(highlight=False)
    if check is not None:
        outcome = check_results(check)
        console.print(outcome.message, style=None if outcome.ok else "bold red", markup=False)
        raise typer.Exit(0 if outcome.ok else 1)
    result = run_study(seed, tasks)
    if out is not None:
        out.write_bytes(render_results(result))
    if not as_json:
        for line in _world_lines(result):
            console.print(line, markup=False)
        console.print(_table(result))
        if out is not None:
            console.print(f"wrote {out}", markup=False)
    typer.echo(summary_line(result))
    if not shape(result)["ok"]:
        raise typer.Exit(1)


def _world_lines(result: StudyResult) -> list[str]:
    world = result.world
    late = 100 * world.late_tasks / world.tasks
    return [
        f"seed {result.seed}: {world.tasks:,} delegations, {world.artifacts:,} artifacts; "
        f"{world.detached_tasks:,} with one > 8 MiB (detached)",
        f"injected: terminal before an artifact {world.late_tasks:,} ({late:.2f}%); "
        f"never delivered {world.lost_artifacts:,}; tampered {sum(world.tampered.values()):,}",
    ]


def _table(result: StudyResult) -> Table:
    rows = summary(result)["requesters"]
    table = Table(caption="added latency: finalization minus the terminal state (finalized tasks)")
    table.add_column("", no_wrap=True)
    for name in rows:
        table.add_column(name, justify="right", no_wrap=True)
    lines: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("premature finalizations", lambda r: _share(r["premature"], result.world.tasks)),
        ("tampered work finalized", lambda r: f"{r['tampered_finalized']:,}"),
        ("integrity failures caught", lambda r: f"{r['integrity_failures_caught']['total']:,}"),
        ("indeterminate (operator review)", lambda r: f"{r['indeterminate']['total']:,}"),
    ]
    for kind, label in (("detached", "detached"), ("other", "others")):
        for stat, name in (("median_s", "median"), ("p99_s", "p99")):
            lines.append((f"added latency, {label}: {name}", _latency(kind, stat)))
    for label, cell in lines:
        table.add_row(label, *(cell(row) for row in rows.values()))
    return table


def _share(part: int, whole: int) -> str:
    return f"{part:,} ({100 * part / whole:.2f}%)" if part else "0"


def _latency(kind: str, stat: str) -> Callable[[dict[str, Any]], str]:
    def cell(row: dict[str, Any]) -> str:
        value = row["added_latency"][kind][stat]
        return "-" if value is None else f"{value:.3f} s"

    return cell
