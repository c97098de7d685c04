"""Metrics shared by the workers of `serve --workers N` (prometheus_client's multiprocess mode).

`prometheus_client` keeps a metric's values in memory-mapped files, one per process, in
the directory named by `PROMETHEUS_MULTIPROC_DIR`, when the value class it builds metrics
with is its multiprocess one. The supervisor calls `enable` before it forks (the workers
inherit both); `Metrics(multiprocess_dir=...)` then sums the files at each scrape, and
`process_died` drops a dead worker's live gauges (its counters and histograms still count).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from prometheus_client import multiprocess, values

__all__ = ["disable", "enable", "enabled", "process_died"]

_TEMPORARY = "studiolo-metrics-"
_ENV = "PROMETHEUS_MULTIPROC_DIR"  # the name prometheus_client reads where it writes a value


def enable(directory: Path | None = None) -> Path:
    """Switch this process (and the processes it forks next) to multiprocess metrics; the
    directory (a fresh temporary one if None) loses its metric files first: old ones would
    be summed. Only `*.db` files are removed from a directory the operator named."""
    path = directory or Path(tempfile.mkdtemp(prefix=_TEMPORARY))
    path.mkdir(parents=True, exist_ok=True)
    _clear(path)
    os.environ[_ENV] = str(path)
    values.ValueClass = values.MultiProcessValue()  # type: ignore[no-untyped-call]
    return path


def enabled() -> bool:
    """Whether this process builds its metrics on the shared files."""
    return bool(getattr(values.ValueClass, "_multiprocess", False))


def disable(directory: Path) -> None:
    """Back to in-memory values (the supervisor, once its workers are gone), metric files
    removed (and the directory, if `enable` made it)."""
    values.ValueClass = values.MutexValue
    os.environ.pop(_ENV, None)
    _clear(directory)
    if directory.name.startswith(_TEMPORARY) and directory.parent == Path(tempfile.gettempdir()):
        shutil.rmtree(directory, ignore_errors=True)


def _clear(directory: Path) -> None:
    for old in directory.glob("*.db"):
        old.unlink(missing_ok=True)


def process_died(pid: int, directory: Path) -> None:
    multiprocess.mark_process_dead(pid, str(directory))  # type: ignore[no-untyped-call]
