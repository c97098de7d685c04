"""``studiolo study``: run the bounded study, or check a results file byte for byte.

A thin face: parse the options, call :mod:`studiolo.study` (``--engine``:
:mod:`studiolo.study.engine`), render with Rich.
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
    CheckOutcome,
    MechanismResult,
    StudyResult,
    check_results,
    compare,
    render_results,
    reproduced,
    run_model,
)
from studiolo.study.engine import EngineResult, check_engine_results, render_engine_results, run_engine

__all__ = ["register"]

ProgressFn = Callable[[int, int], None]


def register(app: typer.Typer) -> None:
    """Add the ``study`` command to ``app``."""
    app.command("study")(study)


def study(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Where to write the results [default: results.json, or engine-results.json with --engine].",
            dir_okay=False,
            show_default=False,
        ),
    ] = None,
    check: Annotated[
        Path | None,
        typer.Option(
            "--check",
            help="Recompute and compare byte for byte with this results file; write nothing.",
            dir_okay=False,
            metavar="RESULTS",
        ),
    ] = None,
    engine: Annotated[
        bool,
        typer.Option(
            "--engine",
            help="Run the schedules through the real completion transaction (both cores, minutes).",
        ),
    ] = False,
) -> None:
    """Re-run the report's bounded interleaving study (model mode, or --engine)."""
    console = Console()
    if check is not None:
        _check(console, check, engine)
        return
    if engine:
        _engine(console, out or Path("engine-results.json"))
        return
    target = out or Path("results.json")
    with _progress(console, "running the model") as progress:
        result = run_model(progress)
    target.write_bytes(render_results(result))
    console.print(_outcome_table(result))
    console.print(_published_table(result))
    console.print(_controls_line(result))
    console.print(f"wrote {target} (source digest {result.source_digest})", markup=False)
    if not reproduced(result):
        console.print("[bold red]the published counts were NOT reproduced[/]")
        raise typer.Exit(1)


def _engine(console: Console, out: Path) -> None:
    with _progress(console, "running the engine") as progress:
        result = run_engine(progress)
    out.write_bytes(render_engine_results(result))
    console.print(_engine_table(result))
    for line in _engine_lines(result):
        console.print(line)
    console.print(f"wrote {out} (source digest {result.study.source_digest})", markup=False)
    if not result.ok:
        console.print("[bold red]the engine run does NOT meet SPEC §4[/]")
        raise typer.Exit(1)


def _check(console: Console, path: Path, engine: bool) -> None:
    label = "recomputing through the engine" if engine else "recomputing"
    with _progress(console, label) as progress:
        outcome: CheckOutcome = (
            check_engine_results(path, progress=progress)
            if engine
            else check_results(path, progress=progress)
        )
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


def _engine_table(result: EngineResult) -> Table:
    table = Table(title=f"Engine beside model ({result.study.schedules.schedules:,} schedules each)")
    table.add_column("mechanism", no_wrap=True)
    for header in ("safe accept", "unsafe accept", "safe reject", "eligible reject"):
        table.add_column(header, justify="right")
    table.add_column("model", justify="right", no_wrap=True)
    table.add_column("replays", justify="right", no_wrap=True)
    for comparison, mechanism in zip(result.comparisons, result.study.mechanisms, strict=True):
        row, model = comparison.engine, comparison.model
        same = "same" if comparison.same else f"{model.unsafe_accept:,} unsafe"
        table.add_row(
            row.mechanism,
            f"{row.safe_accept:,}",
            f"{row.unsafe_accept:,}",
            f"{row.safe_reject:,}",
            f"{row.eligible_reject:,}",
            same if comparison.same or comparison.explained else f"[bold red]{same}, unexplained[/]",
            _replays(mechanism),
        )
    return table


def _engine_lines(result: EngineResult) -> list[str]:
    schedules = result.study.schedules.schedules
    agree = "[green]" if result.oracle_agrees else "[bold red]"
    lines = [
        f"full-atomic: {'exact' if result.full_atomic_exact else '[bold red]NOT 470/0/6,224/0[/]'}; "
        f"{agree}{result.oracle_agreement:,}/{schedules:,}[/] decisions equal the oracle's label",
        _controls_line(result.study),
    ]
    for comparison in result.comparisons:
        for explanation, count in comparison.explanations:
            lines.append(f"{comparison.mechanism}: {count:,} schedules — {explanation.name}")
    counted = ", ".join(f"{n:,} {kind}" for kind, n in result.transactions)
    lines.append(f"completion transactions: {counted}")
    return lines
