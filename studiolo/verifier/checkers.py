"""Checker kinds: how a verifier turns a materialized tree into pass or fail.

A kind is a small class with a `kind` name and a `run` method. `run` gets the read-only
tree, the checker's config (admitted with the checker version, so it is part of what the
project trusts) and a `Sandbox` for anything that starts a process. It returns a
`CheckOutcome`; the runner adds the log header, signs and posts the receipt.

Raise `CheckerConfigError` for a config the kind cannot use: that is a deterministic
property of the admitted checker, so it yields a *failed* receipt saying so. Any other
exception is the verifier's own trouble and yields no receipt at all.
"""

from __future__ import annotations

import json
import re
import sys
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar
from xml.etree import ElementTree

from studiolo._exceptions import InvalidPath
from studiolo.core.canonical import digest_bytes, is_digest
from studiolo.core.enums import VerdictIsolation
from studiolo.core.paths import matches_any, normalize_path
from studiolo.verifier import inside
from studiolo.verifier.sandbox import ProcessResult, Sandbox

__all__ = [
    "BUILTIN_CHECKERS",
    "CheckOutcome",
    "Checker",
    "CheckerConfigError",
    "CommandChecker",
    "DigestEqualsChecker",
    "JsonSchemaChecker",
    "OutputsChecker",
    "PytestChecker",
    "registry",
]

_MAX_READ = 64 * 1024 * 1024


@dataclass(frozen=True)
class CheckOutcome:
    passed: bool
    log: bytes  # what the checker saw and said; stored as a blob, bound by the receipt
    summary: str  # one line, for people (e.g. pytest's "3 passed in 0.12s")


class CheckerConfigError(Exception):
    """The admitted config cannot be used by this kind (a deterministic failure)."""


class Checker(ABC):
    kind: ClassVar[str]
    # Where this kind computes its verdict, signed into every receipt (docs/verifiers.md):
    # SHARED when the candidate's code runs in the process that decides (it can forge the
    # verdict); SEPARATE only when no candidate code ever runs where the verdict is computed.
    verdict_isolation: ClassVar[VerdictIsolation] = VerdictIsolation.SHARED

    @abstractmethod
    def run(self, tree: Path, config: Mapping[str, Any], sandbox: Sandbox) -> CheckOutcome:
        """Check the tree. Read `tree`; write only under `sandbox.scratch`."""


def _process_outcome(
    result: ProcessResult, sandbox: Sandbox, summary: str | None = None, passed: bool | None = None
) -> CheckOutcome:
    if passed is None:
        passed = result.exit_code == 0 and not result.timed_out
    net = "; network: the host's (the checker's config asks for it)" if result.network else ""
    header = f"$ {' '.join(result.argv)}\n[{result.describe()}]\n[sandbox: {sandbox.describe()}{net}]\n"
    return CheckOutcome(passed, header.encode() + result.output, summary or result.describe())


def _network(config: Mapping[str, Any]) -> bool:
    value = config.get("network", False)
    if not isinstance(value, bool):
        raise CheckerConfigError("'network' is true or false")
    return value


def _timeout(config: Mapping[str, Any]) -> float | None:
    value = config.get("timeout")
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
        raise CheckerConfigError("'timeout' is a positive number of seconds")
    return float(value)


def _strings(value: object, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CheckerConfigError(f"{what} must be a list of strings")
    return list(value)


class CommandChecker(Checker):
    """`{"argv": ["make", "check"], "timeout": 60}`: passes iff the command exits 0 in time."""

    kind = "command"

    def run(self, tree: Path, config: Mapping[str, Any], sandbox: Sandbox) -> CheckOutcome:
        argv = _strings(config.get("argv"), "command config 'argv'")
        if not argv:
            raise CheckerConfigError("command config 'argv' is empty")
        result = sandbox.run(argv, timeout=_timeout(config), network=_network(config))
        return _process_outcome(result, sandbox)


_PYTEST_SUMMARY = re.compile(r"^=*\s*((?:\d+ \w+(?:, )?)+|no tests ran)\s+in [\d.]+s", re.MULTILINE)
_INI_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
_COUNTS = ("tests", "failures", "errors", "skipped")
_MAX_REPORT = 16 * 1024 * 1024


class PytestChecker(Checker):
    """`{"args": ["tests"], "timeout": 120, "plugins": false, "network": false}`: runs pytest
    on the tree with the verifier's interpreter. Passes iff pytest exits 0 *and* the JUnit
    report it writes at the end of the session (to a file outside the tree, made empty by
    the runner) exists, parses, and shows at least one test run and none failed or in
    error. A candidate that exits early (`os._exit(0)` at import) leaves no report: fail.

    Third-party plugin autoloading is off unless `"plugins": true` (the verifier's own
    environment should not change a candidate's result). pytest's cache is disabled and no
    bytecode is written, so a clean run leaves the tree untouched.
    """

    kind = "pytest"

    def run(self, tree: Path, config: Mapping[str, Any], sandbox: Sandbox) -> CheckOutcome:
        args = _strings(config.get("args", []), "pytest config 'args'")
        report = sandbox.report_file("junit.xml")
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tree)]
        if not any((tree / name).is_file() for name in _INI_FILES):
            # stop pytest looking above the tree for config
            argv += ["-c", str(sandbox.input_file("pytest.ini", b"[pytest]\n"))]
        argv += ["--junitxml", str(report), "-o", "junit_family=xunit2"]
        env = {} if config.get("plugins") is True else {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        result = sandbox.run([*argv, *args], timeout=_timeout(config), env=env, network=_network(config))
        found = _PYTEST_SUMMARY.findall(result.output.decode("utf-8", "replace"))
        summary = found[-1] if found else result.describe()
        if result.timed_out:
            summary = f"{result.describe()}; last summary: {summary}" if found else result.describe()
        verdict = junit_verdict(report)
        passed = result.exit_code == 0 and not result.timed_out and verdict is None
        if result.exit_code == 0 and verdict is not None:
            summary = f"{summary}; but {verdict}"
        outcome = _process_outcome(result, sandbox, summary, passed)
        note = f"[junit report: {verdict or 'ok'}]\n".encode()
        return CheckOutcome(outcome.passed, outcome.log + note, outcome.summary)


def junit_verdict(path: Path) -> str | None:
    """None when the JUnit report shows >= 1 test run and no failure or error; else why not."""
    try:
        size = path.stat().st_size
        if size == 0:
            return "no test report was written (pytest did not finish its session)"
        if size > _MAX_REPORT:
            return f"the test report is too large ({size} bytes)"
        root = ElementTree.fromstring(path.read_bytes())
    except (OSError, ElementTree.ParseError) as exc:
        return f"the test report is unreadable: {exc}"
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    if root.tag not in ("testsuite", "testsuites") or not suites:
        return "the test report has no test suite"
    try:
        totals = {k: sum(int(s.get(k, "0")) for s in suites) for k in _COUNTS}
    except ValueError:
        return "the test report's counts are not numbers"
    ran = totals["tests"] - totals["skipped"]
    if totals["failures"] or totals["errors"]:
        return f"the test report shows {totals['failures']} failure(s), {totals['errors']} error(s)"
    return None if ran >= 1 else "the test report shows no test run"


class DigestEqualsChecker(Checker):
    """`{"files": {"dist/app.bin": "sha256:…"}}`: passes iff every file has exactly that digest.
    The files are hashed inside the sandbox, like every other check."""

    kind = "digest-equals"
    verdict_isolation = VerdictIsolation.SEPARATE  # hashing runs no candidate code

    def run(self, tree: Path, config: Mapping[str, Any], sandbox: Sandbox) -> CheckOutcome:
        wanted = config.get("files")
        if not isinstance(wanted, Mapping) or not wanted:
            raise CheckerConfigError("digest-equals config 'files' maps paths to sha256 digests")
        for path, digest in wanted.items():
            if not isinstance(path, str) or not is_digest(digest):
                raise CheckerConfigError(f"digest-equals: {path!r} needs a sha256 digest")
        inside_tree = sorted(p for p in wanted if _in_tree(tree, p))
        result, report = _run_inside(sandbox, "digests.py", inside_tree, config)
        if not isinstance(report, dict):
            return _process_outcome(result, sandbox)
        lines, ok = [], True
        for path, digest in sorted(wanted.items()):
            actual = report.get(path) or "missing"
            lines.append(f"{'ok  ' if actual == digest else 'FAIL'} {path}: {actual} (want {digest})")
            ok = ok and actual == digest
        good = sum(line.startswith("ok") for line in lines)
        return CheckOutcome(ok, "\n".join(lines).encode() + b"\n", f"{good}/{len(lines)} digests match")


class JsonSchemaChecker(Checker):
    """`{"schema": {...} | "schema_path": "schemas/x.json", "files": ["data/**/*.json"]}`:
    passes iff at least one file matches and every matching file is JSON valid against
    the schema (its `$schema` picks the draft; 2020-12 by default).

    Parsing and validation run inside the sandbox (`inside/json_schema.py`), bounded in time
    and memory: a document nested 200,000 deep or a pattern that backtracks forever is a
    failed receipt, never the verifier's own crash or hang."""

    kind = "json-schema"
    verdict_isolation = VerdictIsolation.SEPARATE  # the candidate's files are data here, never code

    def run(self, tree: Path, config: Mapping[str, Any], sandbox: Sandbox) -> CheckOutcome:
        schema = self._schema(tree, config)
        patterns = _strings(config.get("files"), "json-schema config 'files'")
        paths = [p for p in _files(tree) if matches_any(patterns, p)]
        if not paths:
            return CheckOutcome(False, f"no file matches {patterns}\n".encode(), "0 file(s) checked")
        schema_file = sandbox.input_file("schema.json", schema)
        request = {"schema": str(schema_file), "files": paths}
        result, report = _run_inside(sandbox, "json_schema.py", request, config)
        if not isinstance(report, dict):
            return _process_outcome(result, sandbox)
        if "misconfigured" in report:
            raise CheckerConfigError(f"json-schema: {report['misconfigured']}")
        problems = report.get("problems") or {}
        lines = [f"{p}: {msg}" for p in paths for msg in problems.get(p, [])]
        summary = f"{len(paths)} file(s) checked, {len(lines)} problem(s)"
        return CheckOutcome(not lines, ("\n".join(lines) or "all valid").encode() + b"\n", summary)

    @staticmethod
    def _schema(tree: Path, config: Mapping[str, Any]) -> bytes:
        """The schema's bytes (parsed inside the sandbox only)."""
        if "schema" in config:
            return json.dumps(config["schema"]).encode()
        path = config.get("schema_path")
        if not isinstance(path, str):
            raise CheckerConfigError("json-schema config needs 'schema' or 'schema_path'")
        data = _read(tree, path)
        if data is None:
            raise CheckerConfigError(f"json-schema: {path} is not in the tree")
        return data


class OutputsChecker(Checker):
    """The candidate's program runs in one sandbox; the assertions over what it wrote run in
    another that holds no candidate code. The verdict is computed where the candidate's code
    never ran, so it cannot be forged — only the outputs can be, and they are what is judged.

    ```
    {"run": ["python3", "tests/emit.py"],            # stage 1: cwd = the candidate's tree;
                                                     #   writes files into $STUDIOLO_OUTPUTS
                                                     #   (its stdout is kept as `stdout` there)
     "assert": ["python3", "tests/check_calc.py"],   # stage 2: cwd = the pinned files below;
                                                     #   reads the outputs at $STUDIOLO_OUTPUTS
     "assertions": {"tests/check_calc.py": "sha256:…"},  # copied from the tree, digest-checked
     "timeout": 60}                                  # per stage
    ```

    Passes iff the program exits 0 and the assertion exits 0, each within the timeout.
    An assertion file that is missing or not the pinned bytes (a candidate that edited it)
    is a failure. Stage 1 packs the outputs into one archive (bounded by the scratch tmpfs
    and the file size limit); stage 2 unpacks it as plain files only.
    """

    kind = "outputs"
    verdict_isolation = VerdictIsolation.SEPARATE

    def run(self, tree: Path, config: Mapping[str, Any], sandbox: Sandbox) -> CheckOutcome:
        program = _strings(config.get("run"), "outputs config 'run'")
        assertion = _strings(config.get("assert"), "outputs config 'assert'")
        pinned = config.get("assertions")
        if not program or not assertion or not isinstance(pinned, Mapping) or not pinned:
            raise CheckerConfigError("outputs config needs 'run', 'assert' and 'assertions' (path → sha256)")
        files, problems = _pinned(tree, pinned)
        if problems:
            return CheckOutcome(False, "\n".join(problems).encode() + b"\n", problems[0])
        first = self._produce(program, config, sandbox)
        if first.exit_code != 0 or first.timed_out:
            return _process_outcome(first, sandbox, f"the program: {first.describe()}", False)
        archive = (sandbox.workspace.reports / "outputs.tar").read_bytes()
        with sandbox.separate(files) as judge:
            second = self._judge(assertion, archive, config, judge)
        log = _process_outcome(first, sandbox).log + b"\n--- assertions (no candidate code) ---\n"
        judged = _process_outcome(second, sandbox, f"the assertions: {second.describe()}")
        return CheckOutcome(judged.passed, log + judged.log, judged.summary)

    @staticmethod
    def _produce(program: list[str], config: Mapping[str, Any], sandbox: Sandbox) -> ProcessResult:
        script = sandbox.input_file("pack_outputs.py", inside.source("pack_outputs.py"))
        archive = sandbox.report_file("outputs.tar")
        outdir = sandbox.scratch / "outputs"
        argv = [sys.executable, "-I", str(script), str(outdir), str(archive), "--", *program]
        return sandbox.run(argv, timeout=_timeout(config), network=_network(config))

    @staticmethod
    def _judge(
        assertion: list[str], archive: bytes, config: Mapping[str, Any], judge: Sandbox
    ) -> ProcessResult:
        script = judge.input_file("unpack_outputs.py", inside.source("unpack_outputs.py"))
        packed = judge.input_file("outputs.tar", archive)
        outdir = judge.scratch / "outputs"
        argv = [sys.executable, "-I", str(script), str(packed), str(outdir), "--", *assertion]
        return judge.run(argv, timeout=_timeout(config))


def _pinned(tree: Path, pinned: Mapping[str, Any]) -> tuple[dict[str, bytes], list[str]]:
    """The assertion files, read from the tree and checked against their pinned digests."""
    files: dict[str, bytes] = {}
    problems = []
    for path, digest in sorted(pinned.items()):
        if not isinstance(path, str) or not is_digest(digest) or not _normal(path):
            raise CheckerConfigError(f"outputs: assertion {path!r} needs a normal path and a sha256 digest")
        data = _read(tree, path)
        if data is None or digest_bytes(data) != digest:
            problems.append(f"assertion file {path} is missing or not the pinned bytes {digest}")
        else:
            files[path] = data
    return files, problems


def _normal(path: str) -> bool:
    try:
        return normalize_path(path) == path
    except InvalidPath:
        return False


def _run_inside(
    sandbox: Sandbox, program: str, request: object, config: Mapping[str, Any]
) -> tuple[ProcessResult, Any]:
    """Run one of `inside/`'s programs in the sandbox; its report, or None if it did not finish."""
    stem = program.removesuffix(".py")
    script = sandbox.input_file(program, inside.source(program))
    req = sandbox.input_file(f"{stem}.request.json", json.dumps(request).encode())
    report = sandbox.report_file(f"{stem}.report.json")
    result = sandbox.run([sys.executable, "-I", str(script), str(req), str(report)], timeout=_timeout(config))
    if result.exit_code != 0 or result.timed_out:
        return result, None
    try:
        if report.stat().st_size > _MAX_REPORT:
            return result, None
        return result, json.loads(report.read_bytes())
    except (OSError, ValueError, RecursionError):
        return result, None


def _files(tree: Path) -> list[str]:
    return sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file())


def _in_tree(tree: Path, rel: str) -> bool:
    """A regular file inside the tree, reached without leaving it."""
    path = (tree / rel).resolve()
    return tree.resolve() in path.parents and path.is_file()


def _read(tree: Path, rel: str) -> bytes | None:
    """A regular file inside the tree (no symlinks, no escaping), or None."""
    if not _in_tree(tree, rel):
        return None
    path = (tree / rel).resolve()
    return None if path.stat().st_size > _MAX_READ else path.read_bytes()


BUILTIN_CHECKERS: tuple[Checker, ...] = (
    CommandChecker(),
    PytestChecker(),
    JsonSchemaChecker(),
    DigestEqualsChecker(),
    OutputsChecker(),
)


def registry(extra: Iterable[Checker] = ()) -> dict[str, Checker]:
    """The built-in kinds plus `extra` (which may replace a built-in of the same kind)."""
    return {c.kind: c for c in (*BUILTIN_CHECKERS, *extra)}
