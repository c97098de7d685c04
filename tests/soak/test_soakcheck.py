"""bench/soakcheck.py must be able to fail, on a real ledger file: violations are planted
with SQL into the tables (the database's own constraints dropped first, since the checker
must not rely on them) and into the clients' logs, and the command line reports each one."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import soakcheck
from studiolo.settings import Settings
from tests.world import World, build_world

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def ledger(tmp_path: Path) -> tuple[Path, Path]:
    """A ledger with one completion (answered, then replayed) and a task reassigned once;
    the client's answers in `logs/client.jsonl` as bench/soak.py's clients write them."""
    w: World = build_world(tmp_path)
    task = w.new_task()
    att = w.coord.claim(w.agent, task.id, 60)
    cand = w.candidate(att, {"src/answer.txt": b"42\n"}, deps={"src/input.txt": 1})
    out = w.complete(task, att, cand, [w.receipt(cand).id], request_id="req-1")
    again = w.complete(task, att, cand, [w.receipt(cand).id], request_id="req-1")
    other = w.new_task("another")
    w.coord.claim(w.agent, other.id, 60)
    w.clock.advance(1)
    w.coord.reassign(w.admin, other.id, w.agent2.id, 60)
    w.coord.store.dispose()
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = [
        {"type": "answer", "rid": "req-1", "task": task.id, "outcome": o, "completion": c.completion.id,
         "signature": c.completion.signature}
        for o, c in (("accepted", out), ("replay", again))
    ]  # fmt: skip
    lines.append({"type": "stats", "stats": {"complete.accepted": 1}})
    (logs / "client.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return tmp_path / "ledger.db", logs


def _cli(db: Path, logs: Path) -> tuple[int, dict[str, Any]]:
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "soakcheck.py"),
            "--url",
            Settings.sqlite_url(db),
            "--logs",
            str(logs),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return run.returncode, json.loads(run.stdout.splitlines()[-1])


def _unconstrained(conn: sqlite3.Connection, table: str) -> None:
    """The table again, with its rows but without its primary key or unique constraints."""
    conn.execute(f"CREATE TABLE bare AS SELECT * FROM {table}")
    conn.execute(f"DROP TABLE {table}")
    conn.execute(f"ALTER TABLE bare RENAME TO {table}")


def test_a_clean_ledger_passes_the_command_line(ledger: tuple[Path, Path]) -> None:
    code, out = _cli(*ledger)
    assert (code, out["problems"], out["accepted"]) == (0, [], 1)


def test_a_duplicated_completion_row_is_caught(ledger: tuple[Path, Path]) -> None:
    db, logs = ledger
    with sqlite3.connect(db) as conn:
        _unconstrained(conn, "completions")
        conn.execute("INSERT INTO completions SELECT * FROM completions")
    code, out = _cli(db, logs)
    text = " | ".join(out["problems"])
    assert code == 1
    assert "has 2 completion rows" in text
    assert "is in the ledger 2 times" in text
    assert "request id req-1" in text and "applied twice: 2 rows, 1 events" in text


def test_a_fence_going_backwards_is_caught(ledger: tuple[Path, Path]) -> None:
    db, logs = ledger
    with sqlite3.connect(db) as conn:
        (task,) = conn.execute("SELECT task_id FROM attempts GROUP BY task_id HAVING COUNT(*) = 2").fetchone()
        (newest,) = conn.execute(
            "SELECT id FROM attempts WHERE task_id = ? ORDER BY created_at DESC LIMIT 1", (task,)
        ).fetchone()
        conn.execute("UPDATE attempts SET fence = 0 WHERE id = ?", (newest,))  # below the first's
    code, out = _cli(db, logs)
    assert code == 1
    assert any(p.startswith(f"fence went backwards on {task}") for p in out["problems"]), out


def test_a_task_fence_below_its_attempts_is_caught(ledger: tuple[Path, Path]) -> None:
    db, logs = ledger
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE tasks SET fence = 0")
    code, out = _cli(db, logs)
    assert code == 1 and any("is below its attempts'" in p for p in out["problems"]), out


def test_an_acceptance_the_ledger_lost_or_changed_is_caught(ledger: tuple[Path, Path]) -> None:
    db, logs = ledger
    rows = soakcheck.load_rows(Settings.sqlite_url(db))
    answers = soakcheck.read_answers(logs)
    assert soakcheck.check_rows(rows, answers).problems == []
    forged = [*answers, {**answers[0], "completion": "cmp_never", "rid": "req-9"}]
    assert any("in the ledger 0 times" in p for p in soakcheck.check_rows(rows, forged).problems)
    resigned = [{**a, "signature": "forged"} for a in answers]
    assert any(
        "differs from what its client was told" in p for p in soakcheck.check_rows(rows, resigned).problems
    )


def test_the_checker_never_loads_the_door() -> None:
    door = ("studiolo.service", "studiolo.faces")
    probe = f"import sys, bench.soakcheck; print(sorted(m for m in sys.modules if m.startswith({door!r})))"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
