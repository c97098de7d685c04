"""Run an evaluation: load the workload, set the world up once, run every cell on a branch of
it, label and measure each trace, check the report's falsification conditions."""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from studiolo.eval.agents import AGENT_VERSION
from studiolo.eval.cell import READ_POLICIES, CellSpec, run_cell
from studiolo.eval.mechanisms import MECHANISMS
from studiolo.eval.metrics import cell_metrics
from studiolo.eval.suite import Suite
from studiolo.eval.workload import Workload, load_workload, suite_argv
from studiolo.eval.world import World, open_world
from studiolo.verifier import Isolation, Limits

__all__ = ["EvalConfig", "EvalResult", "run_eval", "shipped_results", "source_digest"]

SCHEMA = "studiolo.eval-results/1"
WORLD_SEED = 0
_HERE = Path(__file__).parent
# The report's four falsification conditions (§8), as the oracle's violated facts.
FALSIFIERS = {
    "accepts an obsolete revision": ("stale-read", "stale-base"),
    "accepts after a prior revocation": ("revoked",),
    "accepts evidence for a different candidate": ("evidence-other-bytes",),
}


@dataclass(frozen=True)
class EvalConfig:
    repository: str
    until: str
    tasks: int
    seeds: tuple[int, ...] = (1,)
    mechanisms: tuple[str, ...] = MECHANISMS
    read_policies: tuple[str, ...] = READ_POLICIES
    edits: int = 4
    unsafe_no_isolation: bool = False

    def cells(self) -> list[CellSpec]:
        out = [CellSpec(m, p, s) for s in self.seeds for m in self.mechanisms for p in self.read_policies]
        # Falsification condition 4: the full contract under quiescence (no authority, honest agents).
        out += [CellSpec("full-atomic", p, s, quiescent=True) for s in self.seeds for p in self.read_policies]
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "repository": Path(self.repository).name,
            "until": self.until,
            "tasks": self.tasks,
            "seeds": list(self.seeds),
            "mechanisms": list(self.mechanisms),
            "read_policies": list(self.read_policies),
            "edits": self.edits,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], repository: str) -> EvalConfig:
        return cls(
            repository=repository,
            until=str(data["until"]),
            tasks=int(data["tasks"]),
            seeds=tuple(int(s) for s in data["seeds"]),
            mechanisms=tuple(data["mechanisms"]),
            read_policies=tuple(data["read_policies"]),
            edits=int(data["edits"]),
        )


@dataclass
class EvalResult:
    config: EvalConfig
    workload: Workload
    isolation: str
    cells: list[dict[str, Any]] = field(default_factory=list)
    traces: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    wall_s: float = 0.0

    def counterexamples(self) -> dict[str, str]:
        """One cell per unsafe mechanism: the first (in cell order) with an unsafe acceptance."""
        out: dict[str, str] = {}
        for cell in self.cells:
            m = cell["cell"]["mechanism"]
            if m not in out and cell["counts"]["unsafe_accept"]:
                out[m] = cell["key"]
        return out


# The modules whose code decides a trace and its measures: the agent scripts, the authority,
# the harness, the oracle, the workload reader.  (Rendering, the command line and these
# orchestration helpers are not pinned: a change there shows as a byte difference instead.)
PINNED = (
    "agents.py",
    "authority.py",
    "cell.py",
    "mechanisms.py",
    "metrics.py",
    "oracle.py",
    "suite.py",
    "trace.py",
    "workload.py",
    "world.py",
    "../git/history.py",
)


def source_digest() -> str:
    """SHA-256 over the pinned source, each file's name and length first."""
    h = hashlib.sha256()
    for name in PINNED:
        data = (_HERE / name).read_bytes()
        h.update(f"{name}\0{len(data)}\0".encode() + data)
    return "sha256:" + h.hexdigest()


def shipped_results() -> Path:
    """The results file the package ships (`studiolo eval --check` it)."""
    return _HERE / "results.json"


def run_eval(
    config: EvalConfig,
    progress: Callable[[str], None] = lambda _line: None,
    only: list[CellSpec] | None = None,
) -> EvalResult:
    start = time.perf_counter()
    workload = load_workload(config.repository, config.until, config.tasks, config.edits)
    isolation = None if config.unsafe_no_isolation else Isolation.probe(Limits().run_as)
    result = EvalResult(config, workload, "bwrap" if isolation else "none (--unsafe-no-isolation)")
    scratch = None  # the temp dir: the sandbox mounts its own /dev, so not /dev/shm
    with tempfile.TemporaryDirectory(prefix="studiolo-eval-") as tmp:
        suite = Suite(suite_argv(set(workload.base_files)), isolation, scratch)
        runner_opts: dict[str, Any] = {"unsafe_no_isolation": isolation is None, "workdir": scratch}
        if isolation is not None:
            runner_opts["isolation"] = isolation
        with open_world(Path(tmp), workload, WORLD_SEED) as world:
            for spec in only if only is not None else config.cells():
                result.cells.append(_cell(world, workload, spec, suite, runner_opts, result, progress))
    result.wall_s = time.perf_counter() - start
    return result


def _cell(
    world: World,
    workload: Workload,
    spec: CellSpec,
    suite: Suite,
    runner_opts: dict[str, Any],
    result: EvalResult,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    t0 = time.perf_counter()
    records = run_cell(world, workload, spec, suite, runner_opts)
    records[0]["config"] = result.config.to_json()
    counts, timing = cell_metrics(records)
    timing["cell_wall_s"] = round(time.perf_counter() - t0, 3)
    result.traces[spec.key] = records
    c = counts
    progress(
        f"{spec.key}: {c['task_success']}/{c['tasks']} tasks, {c['accepted']} accepted "
        f"({c['unsafe_accept']} unsafe), {c['eligible_reject']} eligible rejected, "
        f"{c['post_merge_breakage']} breakage, {timing['cell_wall_s']:.1f}s"
    )
    return {"key": spec.key, "cell": spec.to_json(), "counts": counts, "timing": timing}


def falsification(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """The report's four conditions, checked on the full contract's cells."""
    full = [c for c in cells if c["cell"]["mechanism"] == "full-atomic"]
    out: dict[str, Any] = {}
    for name, kinds in FALSIFIERS.items():
        hits = [c["key"] for c in full if any(c["counts"]["unsafe_kinds"].get(k) for k in kinds)]
        out[name] = {"holds": bool(hits), "cells": hits}
    quiet = [c for c in full if c["cell"]["quiescent"]]
    short = [c["key"] for c in quiet if c["counts"]["task_success"] < c["counts"]["tasks"]]
    out["cannot complete eligible tasks under quiescence"] = {
        "holds": bool(short) or not quiet,
        "cells": short,
    }
    unsafe = sum(c["counts"]["unsafe_accept"] for c in full)
    out["full_contract_unsafe_accepts"] = unsafe
    out["rejected"] = any(v["holds"] for k, v in out.items() if isinstance(v, dict)) or unsafe > 0
    return out


def pins(result: EvalResult) -> dict[str, Any]:
    return {
        "agents": AGENT_VERSION,
        "eval_source_digest": source_digest(),
        "checker": {"suite@1": suite_argv(set(result.workload.base_files))},
        "isolation": result.isolation,
        "workload": result.workload.pins(),
    }
