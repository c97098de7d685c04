"""The `pytest` checker kind, and the cross-checks that decide its verdict.

pytest runs on the tree with the verifier's interpreter. There is no JUnit report file: a
plugin (`inside/pytest_report.py`) reports collection, every test phase and the session's
exit status through a pipe the runner drains (`channel.py`). The check passes only if all of
these agree: pytest exits 0 in time; the plugin reported a finished session with exit status
0; it collected at least one test and reported every collected test, none failed and at
least one passed; and pytest's own summary line names the same numbers of passed, failed
and skipped tests.

That defeats a candidate that forges a report *file* (there is none) or exits early (no
finished session). It cannot defeat code written against this checker: candidate code runs
in the pytest process, which holds the pipe. A pytest receipt is therefore `shared`; where a
hostile agent must not decide its own verdict, require `separate` and use `outputs`.
"""

from __future__ import annotations

import json
import re
import secrets
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from studiolo.verifier import inside
from studiolo.verifier.channel import Channel
from studiolo.verifier.kind import Checker, CheckOutcome, network, process_outcome, strings, timeout
from studiolo.verifier.sandbox import Sandbox

__all__ = ["PytestChecker", "session_verdict"]

_SUMMARY = re.compile(r"^=*\s*((?:\d+ \w+(?:, )?)+|no tests ran)\s+in [\d.]+s", re.MULTILINE)
_INI_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


class PytestChecker(Checker):
    """`{"args": ["tests"], "timeout": 120, "plugins": false, "network": false}`.

    Third-party plugin autoloading is off unless `"plugins": true` (the verifier's own
    environment should not change a candidate's result). pytest's cache is disabled and no
    bytecode is written, so a clean run leaves the tree untouched.
    """

    kind = "pytest"

    def run(self, tree: Path, config: Mapping[str, Any], sandbox: Sandbox) -> CheckOutcome:
        args = strings(config.get("args", []), "pytest config 'args'")
        # a fresh module name: a module of the same name in the tree (first on sys.path under
        # `-m`) cannot stand in for the plugin
        name = f"studiolo_report_{secrets.token_hex(8)}"
        plugin = sandbox.input_file(f"{name}.py", inside.source("pytest_report.py"))
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", name]
        argv += ["--rootdir", str(tree)]
        if not any((tree / name).is_file() for name in _INI_FILES):
            # stop pytest looking above the tree for config
            argv += ["-c", str(sandbox.input_file("pytest.ini", b"[pytest]\n"))]
        env = {"PYTHONPATH": str(plugin.parent)}
        if config.get("plugins") is not True:
            env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        channel = Channel()
        try:
            result = sandbox.run(
                [*argv, *args], timeout=timeout(config), env=env, network=network(config), channel=channel
            )
            records = channel.data()
        finally:
            channel.close()
        text = result.output.decode("utf-8", "replace")
        found = _SUMMARY.findall(text)
        summary = found[-1] if found else result.describe()
        if result.timed_out:
            summary = f"{result.describe()}; last summary: {summary}" if found else result.describe()
        problem = session_verdict(records, found[-1] if found else None, channel.overflowed)
        passed = result.exit_code == 0 and not result.timed_out and problem is None
        if result.exit_code == 0 and problem is not None:
            summary = f"{summary}; but {problem}"
        outcome = process_outcome(result, sandbox, summary, passed)
        note = f"[session report: {problem or 'ok'}]\n".encode()
        return CheckOutcome(outcome.passed, outcome.log + note, outcome.summary)


def session_verdict(records: bytes, summary: str | None, overflowed: bool = False) -> str | None:
    """None when the channel shows a finished session with exit status 0, >= 1 test passed,
    every collected test reported and none failed, and pytest's summary agrees; else why not."""
    if overflowed:
        return "the session report is too large"
    try:
        lines = [json.loads(line) for line in records.decode().splitlines() if line.strip()]
    except (UnicodeDecodeError, ValueError, RecursionError):
        return "the session report is unreadable"
    if not all(isinstance(line, dict) for line in lines):
        return "the session report is unreadable"
    finished = [line for line in lines if "finished" in line]
    collected = [line["collected"] for line in lines if "collected" in line and "finished" not in line]
    if len(finished) != 1 or finished[-1] is not lines[-1] or len(collected) != 1:
        return "the test session did not finish (no report of its end)"
    if finished[0].get("finished") != 0:
        return f"pytest's session ended with exit status {finished[0].get('finished')}"
    outcomes = _outcomes([line for line in lines if "test" in line])
    counts = Counter(outcomes.values())
    if collected[0] != finished[0].get("collected") or len(outcomes) != collected[0]:
        return f"{collected[0]} test(s) collected but {len(outcomes)} reported"
    if counts["failed"]:
        return f"the session report shows {counts['failed']} failed test(s)"
    if not counts["passed"]:
        return "the session report shows no test run"
    return _agrees(counts, summary)


def _outcomes(reports: list[dict[str, Any]]) -> dict[str, str]:
    """Each test's outcome from its phases: failed if any phase failed, skipped if one was."""
    out: dict[str, str] = {}
    for r in reports:
        test, outcome = str(r.get("test")), r.get("outcome")
        if outcome == "failed" or out.get(test) == "failed":
            out[test] = "failed"
        elif outcome == "skipped" or out.get(test) == "skipped":
            out[test] = "skipped"
        elif r.get("when") == "call" and outcome == "passed":
            out[test] = "passed"
        else:
            out.setdefault(test, "unfinished")
    return {t: ("failed" if o == "unfinished" else o) for t, o in out.items()}


def _agrees(counts: Counter[str], summary: str | None) -> str | None:
    if summary is None:
        return "pytest printed no summary line"
    said = Counter({word: int(n) for n, word in re.findall(r"(\d+) (\w+)", summary)})
    said["skipped"] += said["xfailed"]  # pytest reports an expected failure as skipped
    said["passed"] += said["xpassed"]
    for word in ("passed", "failed", "skipped"):
        if said[word] != counts[word]:
            return f"pytest's summary ({summary}) disagrees with the session report ({dict(counts)})"
    return None
