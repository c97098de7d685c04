"""`serve --workers N`: each worker runs in a slot 0..N-1, a dead worker is replaced in its
own slot, and only slot 0 runs the retention sweeper's timer."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from studiolo.faces.http.server import slot_settings
from studiolo.settings import Settings

# Runs a real supervisor: slot 0's first worker dies at once (and is replaced), the others
# live until SIGTERM. Each worker appends "<slot> <pid>" to the file.
_SCRIPT = """
import os, sys, time
from studiolo.faces.http.server import _Supervisor
out = sys.argv[1]
def target(slot):
    first = not os.path.exists(out + ".died")
    with open(out, "a") as f:
        f.write(f"{slot} {os.getpid()}\\n")
    if slot == 0 and first:
        open(out + ".died", "w").close()
        raise SystemExit(1)
    time.sleep(600)
_Supervisor(target, 3).run()
"""


def test_only_slot_zero_sweeps() -> None:
    base = replace(Settings(), retention_sweep_seconds=60.0)
    assert slot_settings(base, 0).retention_sweep_seconds == 60.0
    assert [slot_settings(base, k).retention_sweep_seconds for k in (1, 2, 7)] == [0.0, 0.0, 0.0]
    assert replace(slot_settings(base, 1), retention_sweep_seconds=60.0) == base  # nothing else


def test_a_dead_worker_is_replaced_in_its_slot(tmp_path: Path) -> None:
    out = tmp_path / "slots"
    proc = subprocess.Popen([sys.executable, "-c", _SCRIPT, str(out)])
    try:
        deadline = time.monotonic() + 60
        while not out.exists() or len(out.read_text().splitlines()) < 4:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    rows = [line.split() for line in out.read_text().splitlines()]
    slots = sorted(int(s) for s, _ in rows)
    assert slots == [0, 0, 1, 2]  # 0 twice: its first worker died and was replaced there
    assert len({pid for _, pid in rows}) == 4 and str(os.getpid()) not in {pid for _, pid in rows}
