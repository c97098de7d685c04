"""The built-in checker kinds, each on a small sealed tree."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from studiolo.core.canonical import digest_bytes
from studiolo.verifier.checkers import (
    CheckerConfigError,
    CommandChecker,
    DigestEqualsChecker,
    JsonSchemaChecker,
    PytestChecker,
    registry,
)
from studiolo.verifier.isolation import Isolation
from studiolo.verifier.pytest_kind import session_verdict
from studiolo.verifier.sandbox import Limits, Sandbox, Workspace

SCHEMA = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}


@pytest.fixture
def make_sandbox(tmp_path: Path, isolation: Isolation) -> Iterator[Any]:
    made: list[Workspace] = []

    def make(files: Mapping[str, bytes]) -> Sandbox:
        ws = Workspace(tmp_path)
        for rel, data in files.items():
            (ws.tree / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws.tree / rel).write_bytes(data)
        ws.seal()
        made.append(ws)
        return Sandbox(ws, Limits(timeout=60), isolation=isolation)

    yield make
    for ws in made:
        ws.__exit__(None, None, None)


def test_registry_has_the_five_kinds() -> None:
    assert sorted(registry()) == ["command", "digest-equals", "json-schema", "outputs", "pytest"]
    separate = sorted(k for k, c in registry().items() if c.verdict_isolation == "separate")
    assert separate == ["digest-equals", "json-schema", "outputs"]


def test_command_passes_on_exit_zero(make_sandbox: Any) -> None:
    sb = make_sandbox({"a.txt": b"x\n"})
    assert CommandChecker().run(sb.tree, {"argv": ["test", "-f", "a.txt"]}, sb).passed
    failed = CommandChecker().run(sb.tree, {"argv": ["test", "-f", "b.txt"]}, sb)
    assert not failed.passed and failed.summary == "exit code 1"
    assert failed.log.startswith(b"$ test -f b.txt\n[exit code 1]\n[sandbox: isolated (bwrap")


def test_command_network_is_asked_for_and_logged(make_sandbox: Any) -> None:
    sb = make_sandbox({})
    offline = CommandChecker().run(sb.tree, {"argv": ["true"]}, sb)
    online = CommandChecker().run(sb.tree, {"argv": ["true"], "network": True}, sb)
    assert b"network: the host's" in online.log and b"network: the host's" not in offline.log


@pytest.mark.parametrize(
    "config",
    [{}, {"argv": []}, {"argv": "make"}, {"argv": ["true"], "timeout": -1}, {"argv": ["true"], "network": 1}],
)
def test_command_config_errors(make_sandbox: Any, config: dict[str, Any]) -> None:
    sb = make_sandbox({})
    with pytest.raises(CheckerConfigError):
        CommandChecker().run(sb.tree, config, sb)


def test_pytest_records_the_summary(make_sandbox: Any) -> None:
    tests = b"def test_a():\n    assert 1\n\ndef test_b():\n    assert 0\n\ndef test_c():\n    assert 1\n"
    sb = make_sandbox({"test_x.py": tests})
    outcome = PytestChecker().run(sb.tree, {}, sb)
    assert not outcome.passed
    assert outcome.summary == "1 failed, 2 passed"
    assert b"assert 0" in outcome.log
    assert sb.workspace.violations() == []  # no cache, no bytecode left in the tree


def test_pytest_with_no_tests_fails(make_sandbox: Any) -> None:
    sb = make_sandbox({"README": b"nothing to test\n"})
    outcome = PytestChecker().run(sb.tree, {}, sb)
    assert not outcome.passed and outcome.summary == "no tests ran"


def test_pytest_zero_tests_fails_even_when_pytest_exits_zero(make_sandbox: Any) -> None:
    """A conftest that turns "no tests collected" (exit 5) into exit 0: the report decides."""
    conftest = b"def pytest_sessionfinish(session, exitstatus):\n    session.exitstatus = 0\n"
    sb = make_sandbox({"conftest.py": conftest, "test_nothing.py": b"# no tests here\n"})
    outcome = PytestChecker().run(sb.tree, {}, sb)
    assert not outcome.passed
    assert outcome.summary == "no tests ran; but pytest's session ended with exit status 5"
    assert b"[exit code 0]" in outcome.log


def test_pytest_os_exit_zero_at_import_fails(make_sandbox: Any) -> None:
    candidate = b"import os; os._exit(0)\n\ndef test_never_runs():\n    assert False\n"
    sb = make_sandbox({"test_evil.py": candidate})
    outcome = PytestChecker().run(sb.tree, {}, sb)
    assert not outcome.passed
    assert "the test session did not finish" in outcome.summary
    assert b"[exit code 0]" in outcome.log


def test_pytest_offers_no_report_path_and_cross_checks_the_summary(make_sandbox: Any) -> None:
    """Issue 32: nothing in argv names a report file; a candidate that prints a passing summary
    and exits 0 after the real session ended is caught by the count cross-check."""
    spy = (
        b"import sys\n\ndef test_argv():\n    assert not any('junit' in a or 'xml' in a for a in sys.argv)\n"
    )
    sb = make_sandbox({"test_argv.py": spy})
    assert PytestChecker().run(sb.tree, {}, sb).passed
    liar = b"import atexit, os\natexit.register(lambda: (print('\\n7 passed in 0.01s'), os._exit(0)))\n"
    tests = b"def test_fails():\n    assert False\n"
    sb = make_sandbox({"conftest.py": liar, "test_x.py": tests})
    outcome = PytestChecker().run(sb.tree, {}, sb)
    assert not outcome.passed and b"[exit code 0]" in outcome.log, outcome.summary


def test_pytest_only_skipped_tests_fail(make_sandbox: Any) -> None:
    tests = b"import pytest\n\n@pytest.mark.skip\ndef test_a():\n    pass\n"
    sb = make_sandbox({"test_skip.py": tests})
    outcome = PytestChecker().run(sb.tree, {}, sb)
    assert not outcome.passed and outcome.summary == "1 skipped; but the session report shows no test run"


def test_pytest_ignores_config_above_the_tree(make_sandbox: Any, tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --this-option-does-not-exist\n")
    sb = make_sandbox({"test_ok.py": b"def test_ok():\n    pass\n"})
    outcome = PytestChecker().run(sb.tree, {}, sb)
    assert outcome.passed and outcome.summary == "1 passed"
    assert outcome.log.endswith(b"[session report: ok]\n")


def test_pytest_timeout_is_a_failure(make_sandbox: Any) -> None:
    sb = make_sandbox({"test_slow.py": b"import time\n\ndef test_slow():\n    time.sleep(30)\n"})
    outcome = PytestChecker().run(sb.tree, {"timeout": 1}, sb)
    assert not outcome.passed and outcome.summary.startswith("timed out after")


def test_digest_equals(make_sandbox: Any) -> None:
    sb = make_sandbox({"dist/app.bin": b"\x00\x01"})
    good = {"files": {"dist/app.bin": digest_bytes(b"\x00\x01")}}
    assert DigestEqualsChecker().run(sb.tree, good, sb).passed
    bad = {"files": {"dist/app.bin": digest_bytes(b"other"), "dist/missing": digest_bytes(b"")}}
    outcome = DigestEqualsChecker().run(sb.tree, bad, sb)
    assert not outcome.passed and outcome.summary == "0/2 digests match"
    assert b"dist/missing: missing" in outcome.log
    with pytest.raises(CheckerConfigError):
        DigestEqualsChecker().run(sb.tree, {"files": {"dist/app.bin": "md5:abc"}}, sb)


def test_digest_equals_does_not_follow_paths_out_of_the_tree(make_sandbox: Any, tmp_path: Path) -> None:
    (tmp_path / "secret").write_bytes(b"s")
    sb = make_sandbox({})
    config = {"files": {"../../secret": digest_bytes(b"s")}}
    assert not DigestEqualsChecker().run(sb.tree, config, sb).passed


def test_json_schema_inline_and_from_the_tree(make_sandbox: Any) -> None:
    files = {
        "data/a.json": b'{"name": "ok"}',
        "data/b.json": b'{"name": 3}',
        "data/c.json": b"{not json",
        "schemas/item.json": json.dumps(SCHEMA).encode(),
    }
    sb = make_sandbox(files)
    good = JsonSchemaChecker().run(sb.tree, {"schema": SCHEMA, "files": ["data/a.json"]}, sb)
    assert good.passed and good.summary == "1 file(s) checked, 0 problem(s)"
    bad = JsonSchemaChecker().run(sb.tree, {"schema_path": "schemas/item.json", "files": ["data/*.json"]}, sb)
    assert not bad.passed and bad.summary == "3 file(s) checked, 2 problem(s)"
    assert b"data/b.json: /name: 3 is not of type 'string'" in bad.log
    assert b"data/c.json: not JSON" in bad.log


def test_json_schema_with_nothing_to_check_fails(make_sandbox: Any) -> None:
    sb = make_sandbox({"a.txt": b""})
    outcome = JsonSchemaChecker().run(sb.tree, {"schema": SCHEMA, "files": ["**/*.json"]}, sb)
    assert not outcome.passed


@pytest.mark.parametrize(
    "config",
    [
        {"files": ["*.json"]},
        {"schema": SCHEMA},
        {"schema": {"type": 12}, "files": ["*.json"]},
        {"schema_path": "nope.json", "files": ["*.json"]},
    ],
)
def test_json_schema_config_errors(make_sandbox: Any, config: dict[str, Any]) -> None:
    sb = make_sandbox({"a.json": b"{}"})
    with pytest.raises(CheckerConfigError):
        JsonSchemaChecker().run(sb.tree, config, sb)


def _session(*lines: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


_A_PASSED = (
    {"test": "t.py::a", "when": "setup", "outcome": "passed"},
    {"test": "t.py::a", "when": "call", "outcome": "passed"},
    {"test": "t.py::a", "when": "teardown", "outcome": "passed"},
)
_B_SKIPPED = ({"test": "t.py::b", "when": "setup", "outcome": "skipped"},)
_B_FAILED = (
    {"test": "t.py::b", "when": "setup", "outcome": "passed"},
    {"test": "t.py::b", "when": "call", "outcome": "failed"},
)
_DONE_2 = {"finished": 0, "collected": 2}


@pytest.mark.parametrize(
    ("records", "summary", "verdict"),
    [
        (_session({"collected": 2}, *_A_PASSED, *_B_SKIPPED, _DONE_2), "1 passed, 1 skipped", None),
        (_session({"collected": 2}, *_A_PASSED, *_B_SKIPPED, _DONE_2), "2 passed", "pytest's summary"),
        (_session({"collected": 2}, *_A_PASSED, *_B_SKIPPED, _DONE_2), None, "pytest printed no summary"),
        (b"", "1 passed", "the test session did not finish"),
        (_session({"collected": 1}, *_A_PASSED), "1 passed", "the test session did not finish"),
        (_session({"collected": 2}, *_A_PASSED, _DONE_2), "1 passed", "2 test(s) collected but 1 reported"),
        (
            _session({"collected": 2}, *_A_PASSED, *_B_FAILED, {"finished": 1, "collected": 2}),
            "1 failed",
            "exit",
        ),
        (
            _session({"collected": 2}, *_A_PASSED, *_B_FAILED, _DONE_2),
            "1 passed",
            "the session report shows 1 failed",
        ),
        (
            _session({"collected": 1}, *_B_SKIPPED[:0], {"finished": 0, "collected": 1}),
            "",
            "1 test(s) collected",
        ),
        (_session({"collected": 0}, {"finished": 0, "collected": 0}), "no tests ran", "no test run"),
        (b"{not json\n", "1 passed", "the session report is unreadable"),
        (
            _session({"collected": 1}, *_A_PASSED, {"finished": 0, "collected": 1}, *_A_PASSED),
            "1 passed",
            "did not",
        ),
    ],
)
def test_the_session_report_decides(records: bytes, summary: str | None, verdict: str | None) -> None:
    found = session_verdict(records, summary)
    assert found == verdict or (verdict is not None and found is not None and verdict in found), found
