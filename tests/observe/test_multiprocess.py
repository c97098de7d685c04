"""`serve --workers 2`: every worker answers `GET /metrics` with the sums of all of them, a
worker killed with SIGKILL included, and the supervisor leaves no metric file behind."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from studiolo.faces.http.server import free_port
from tests.faces.test_workers import STUDIOLO, _children, _healthy
from tests.world import build_world


def _healthz_count(url: str) -> float:
    with httpx.Client(base_url=url, timeout=30) as http:  # a new connection: any worker
        text = http.get("/metrics").text
    return sum(
        s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "studiolo_http_requests_total" and s.labels["route"] == "/healthz"
    )


def test_workers_share_their_counts_and_a_killed_workers_still_count(tmp_path: Path) -> None:
    w = build_world(tmp_path, clock=time.time)
    w.coord.store.dispose()
    port, shared = free_port(), tmp_path / "metrics"
    env = {**os.environ, "STUDIOLO_DATABASE_URL": w.coord.store.url, "STUDIOLO_METRICS_DIR": str(shared)}
    env["STUDIOLO_LOG"] = "off"
    proc = subprocess.Popen(
        [*STUDIOLO, "serve", "--port", str(port), "--workers", "2"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while len(_children(proc.pid)) < 2 or not _healthy(url):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        before = _healthz_count(url)  # the polls above, however many
        for _ in range(40):
            assert httpx.get(f"{url}/healthz", timeout=30).status_code == 200  # a new connection each
        assert len(list(shared.glob("*.db"))) >= 2  # both workers wrote their files
        settle = time.monotonic() + 30  # a request is counted just after its answer is sent
        while _healthz_count(url) < before + 40 and time.monotonic() < settle:
            time.sleep(0.05)
        counts = {_healthz_count(url) for _ in range(6)}  # whichever worker answers
        assert counts == {before + 40}
        victim = min(_children(proc.pid))
        os.kill(victim, signal.SIGKILL)
        while len(_children(proc.pid) - {victim}) < 2:  # the supervisor replaced it
            assert time.monotonic() < deadline + 30
            time.sleep(0.1)
        while not _healthy(url):
            time.sleep(0.1)
        assert _healthz_count(url) >= before + 40  # the dead worker's requests still count
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert not list(shared.glob("*.db"))
