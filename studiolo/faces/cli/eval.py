"""``studiolo eval``: the report's §8 evaluation on a repository's history
(docs/evaluation.md). A thin face: parse, call :mod:`studiolo.eval`, print."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

__all__ = ["register"]

_SHIPPED_REPO = "tomli.bundle"


def register(app: typer.Typer) -> None:
    """Add the ``eval`` command to ``app``."""
    app.command("eval")(eval_command)


def eval_command(
    repo: Annotated[
        str | None,
        typer.Option(
            "--repo",
            help="A git repository, bare repository or bundle [default: the file's, found "
            "beside the working directory or in ../shared/eval/].",
            show_default=False,
        ),
    ] = None,
    until: Annotated[str, typer.Option(help="The last commit of the window (first-parent line).")] = "HEAD",
    tasks: Annotated[int, typer.Option(min=1, max=200, help="How many commits (tasks) end at --until.")] = 6,
    seeds: Annotated[str, typer.Option(help="Comma-separated seeds.")] = "1",
    mechanism: Annotated[list[str] | None, typer.Option(help="Only these mechanisms (repeatable).")] = None,
    read_policy: Annotated[
        list[str] | None, typer.Option(help="Only these read policies (repeatable).")
    ] = None,
    edits: Annotated[int, typer.Option(min=0, help="Human direct edits from later commits.")] = 4,
    out: Annotated[Path, typer.Option(help="The results file to write.", dir_okay=False)] = Path(
        "eval-results.json"
    ),
    traces: Annotated[
        Path | None,
        typer.Option(help="Write the counterexample traces here [default: traces/ beside --out]."),
    ] = None,
    all_traces: Annotated[
        bool, typer.Option("--all-traces", help="Write every cell's trace, not only counterexamples.")
    ] = False,
    check: Annotated[
        Path | None,
        typer.Option(
            help="Recompute this results file and compare (timing excluded).",
            metavar="RESULTS",
            dir_okay=False,
        ),
    ] = None,
    replay: Annotated[
        Path | None,
        typer.Option(
            help="Re-run this trace's cell and compare every record.", metavar="TRACE", dir_okay=False
        ),
    ] = None,
    unsafe_no_isolation: Annotated[
        bool, typer.Option("--unsafe-no-isolation", help="Run the suite without the verifier's sandbox.")
    ] = False,
) -> None:
    """Run the report's evaluation on a repository's history (or --check, --replay)."""
    from studiolo.eval.mechanisms import MECHANISMS
    from studiolo.eval.results import check_results, render_results, render_table, replay_trace, write_traces
    from studiolo.eval.run import EvalConfig, run_eval

    echo = typer.echo
    if check is not None or replay is not None:
        target = check if check is not None else replay
        assert target is not None
        found = repo or _find_repository(_named_repository(target))
        outcome = (check_results if check is not None else replay_trace)(target, found, echo)
        echo(outcome.message)
        raise typer.Exit(0 if outcome.ok else 1)
    if repo is None:
        repo = _find_repository(_SHIPPED_REPO)
    unknown = [m for m in mechanism or () if m not in MECHANISMS]
    if unknown:
        raise typer.BadParameter(f"unknown mechanism(s) {unknown}; choose from {list(MECHANISMS)}")
    config = EvalConfig(
        repository=repo,
        until=until,
        tasks=tasks,
        seeds=tuple(int(s) for s in seeds.split(",") if s.strip()),
        mechanisms=tuple(mechanism or MECHANISMS),
        read_policies=tuple(read_policy or ("written", "opened", "package")),
        edits=edits,
        unsafe_no_isolation=unsafe_no_isolation,
    )
    result = run_eval(config, echo)
    out.write_text(render_results(result), encoding="utf-8")
    written = write_traces(result, traces or out.parent / "traces", every=all_traces)
    doc = json.loads(out.read_text(encoding="utf-8"))
    echo(render_table(doc))
    for name, verdict in doc["falsification"].items():
        echo(f"falsification: {name}: {verdict}")
    echo(f"wrote {out} and {len(written)} trace(s); {result.wall_s:.0f} s")
    raise typer.Exit(1 if doc["falsification"]["rejected"] else 0)


def _named_repository(path: Path) -> str:
    """The repository name a results file or a trace's header records."""
    try:
        if path.suffix == ".jsonl":
            first = path.read_text(encoding="utf-8").split("\n", 1)[0]
            return str(json.loads(first)["config"]["repository"])
        return str(json.loads(path.read_text(encoding="utf-8"))["config"]["repository"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise typer.BadParameter(f"{path}: not an evaluation results file or trace ({exc})") from exc


def _find_repository(name: str) -> str:
    for candidate in (Path(name), Path("..") / "shared" / "eval" / name, Path("shared") / "eval" / name):
        if candidate.exists():
            return str(candidate)
    raise typer.BadParameter(f"repository {name!r} not found here or in ../shared/eval/: name it with --repo")
