"""``studiolo study``: run the bounded study, or check a results file byte for byte.

A thin face: parse the options, call :mod:`studiolo.study`, render with Rich.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from studiolo.study import (
    MechanismResult,
    StudyResult,
    check_results,
    compare,
    render_results,
    reproduced,
    run_model,
)

__all__ = ["register"]

ProgressFn = Callable[[int, int], None]


def register(app: typer.Typer) -> None:
    """Add the ``study`` command to ``app``."""
    app.command("study")(study)


def study(
    out: Annotated[Path, typer.Option("--out", help="Where to write results.json.", dir_okay=False)] = Path(
        "results.json"
    ),
    check: Annotated[
        Path | None,
        typer.Option(
            "--check",
            help="Recompute and compare byte for byte with this results file; write nothing.",
            dir_okay=False,
            metavar="RESULTS",
        ),
    ] = None,
) -> None:
    """Re-run the report's bounded interleaving study (model mode)."""
    console = Console()
    if check is not None:
        _check(console, check)
        return
    with _progress(console, "running the model") as progress:
        result = run_model(progress)
    out.write_bytes(render_results(result))
    console.print(_outcome_table(result))
    console.print(_published_table(result))
    console.print(_controls_line(result))
    console.print(f"wrote {out} (source digest {result.source_digest})", markup=False)
    if not reproduced(result):
        console.print("[bold red]the published counts were NOT reproduced[/]")
        raise typer.Exit(1)


def _check(console: Console, path: Path) -> None:
    with _progress(console, "recomputing") as progress:
        outcome = check_results(path, progress=progress)
    if not outcome.ok:
        console.print(outcome.message, style="bold red", markup=False, highlight=False)
        raise typer.Exit(1)
    console.print(outcome.message, markup=False, highlight=False)


@contextmanager
def _progress(console: Console, label: str) -> Iterator[ProgressFn]:
    columns = (
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def _outcome_table(result: StudyResult) -> Table:
    table = Table(title=f"Decisions per mechanism ({result.schedules.schedules:,} schedules each)")
    table.add_column("mechanism", no_wrap=True)
    for header in ("safe accept", "unsafe accept", "safe reject", "eligible reject"):
        table.add_column(header, justify="right")
    table.add_column("replays", justify="right", no_wrap=True)
    for mechanism in result.mechanisms:
        row = mechanism.row
        table.add_row(
            row.mechanism,
            f"{row.safe_accept:,}",
            f"{row.unsafe_accept:,}",
            f"{row.safe_reject:,}",
            f"{row.eligible_reject:,}",
            _replays(mechanism),
        )
    return table


def _replays(mechanism: MechanismResult) -> str:
    tally = mechanism.replays
    return f"{tally.accepted_runs:,} ok" if tally.ok else f"[bold red]{tally.accepted_runs:,} FAILED[/]"


def _published_table(result: StudyResult) -> Table:
    table = Table(title="Beside the report's published counts")
    table.add_column("count", no_wrap=True)
    table.add_column("report", justify="right")
    table.add_column("ours", justify="right")
    table.add_column("match", justify="center")
    for comparison in compare(result):
        table.add_row(
            comparison.claim,
            f"{comparison.published:,}",
            f"{comparison.computed:,}",
            "[green]yes[/]" if comparison.matches else "[bold red]NO[/]",
        )
    return table


def _controls_line(result: StudyResult) -> str:
    matching = sum(control.matches for control in result.controls)
    return (
        f"negative controls: {result.control_executions} executions; "
        f"{matching}/{len(result.controls)} behave as the report expects"
    )
