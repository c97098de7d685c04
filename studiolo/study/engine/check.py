"""``studiolo study --engine --check``: recompute the engine run, compare byte for byte."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from studiolo.study.check import CheckOutcome, first_difference
from studiolo.study.engine.render import render_engine_results
from studiolo.study.engine.result import EngineResult
from studiolo.study.engine.run import run_engine
from studiolo.study.space import Progress

__all__ = ["EngineRunner", "check_engine_results"]

EngineRunner = Callable[[Progress | None], EngineResult]


def check_engine_results(
    path: Path,
    *,
    result: EngineResult | None = None,
    run: EngineRunner | None = None,
    progress: Progress | None = None,
) -> CheckOutcome:
    """Recompute the engine run (or use ``result``) and compare the bytes with ``path``."""
    try:
        found = path.read_bytes()
    except OSError as exc:
        return CheckOutcome(False, f"FAILED: cannot read {path}: {exc.strerror or exc}")
    if result is None:
        result = (run or run_engine)(progress)
    expected = render_engine_results(result)
    digest = result.study.source_digest
    if found == expected:
        return CheckOutcome(
            True,
            f"OK {path}: byte-identical to a fresh engine run "
            f"({len(expected)} bytes, source digest {digest})",
            source_digest_differs=False,
        )
    difference = first_difference(expected, found)
    differs = _digest_differs(found, digest)
    where = (
        f"FAILED {path}: differs from a fresh engine run at line {difference.line} "
        f"(byte {difference.offset}): expected {difference.expected!r}, found {difference.found!r}."
    )
    if differs:
        where += f" The source digest differs (current {digest}): regenerate the file."
    elif differs is False:
        where += " The source digest is the same: the engine's decisions (or the file) changed."
    return CheckOutcome(False, where, difference, differs)


def _digest_differs(found: bytes, current: str) -> bool | None:
    try:
        shipped = json.loads(found).get("source_digest")
    except (ValueError, AttributeError):
        return None
    return None if not isinstance(shipped, str) else shipped != current
