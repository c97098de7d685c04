"""The built-in checker kinds, and the registry a runner takes them from.

    command        any command in the candidate's tree          verdict: shared
    pytest         pytest on the tree (pytest_kind.py)          verdict: shared
    json-schema    JSON files against a schema, in the sandbox  verdict: separate
    digest-equals  files with exactly these digests             verdict: separate
    outputs        the program's outputs judged in a second sandbox with no
                   candidate code (outputs.py)                  verdict: separate

The interface (`Checker`, `CheckOutcome`, `CheckerConfigError`) is in `kind.py`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from studiolo.core.canonical import is_digest
from studiolo.core.enums import VerdictIsolation
from studiolo.core.paths import matches_any
from studiolo.verifier import inside
from studiolo.verifier.kind import (
    Checker,
    CheckerConfigError,
    CheckOutcome,
    in_tree,
    network,
    process_outcome,
    read_in_tree,
    strings,
    timeout,
)
from studiolo.verifier.outputs import OutputsChecker
from studiolo.verifier.pytest_kind import PytestChecker
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

_MAX_REPORT = 16 * 1024 * 1024


class CommandChecker(Checker):
    """`{"argv": ["make", "check"], "timeout": 60}`: passes iff the command exits 0 in time."""

    kind = "command"

    def run(self, tree: Path, config: Mapping[str, Any], sandbox: Sandbox) -> CheckOutcome:
        argv = strings(config.get("argv"), "command config 'argv'")
        if not argv:
            raise CheckerConfigError("command config 'argv' is empty")
        result = sandbox.run(argv, timeout=timeout(config), network=network(config))
        return process_outcome(result, sandbox)


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
        inside_tree = sorted(p for p in wanted if in_tree(tree, p))
        result, report = _run_inside(sandbox, "digests.py", inside_tree, config)
        if not isinstance(report, dict):
            return process_outcome(result, sandbox)
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
        patterns = strings(config.get("files"), "json-schema config 'files'")
        paths = [p for p in _files(tree) if matches_any(patterns, p)]
        if not paths:
            return CheckOutcome(False, f"no file matches {patterns}\n".encode(), "0 file(s) checked")
        schema_file = sandbox.input_file("schema.json", schema)
        request = {"schema": str(schema_file), "files": paths}
        result, report = _run_inside(sandbox, "json_schema.py", request, config)
        if not isinstance(report, dict):
            return process_outcome(result, sandbox)
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
        data = read_in_tree(tree, path)
        if data is None:
            raise CheckerConfigError(f"json-schema: {path} is not in the tree")
        return data


def _run_inside(
    sandbox: Sandbox, program: str, request: object, config: Mapping[str, Any]
) -> tuple[ProcessResult, Any]:
    """Run one of `inside/`'s programs in the sandbox; its report, or None if it did not finish."""
    stem = program.removesuffix(".py")
    script = sandbox.input_file(program, inside.source(program))
    req = sandbox.input_file(f"{stem}.request.json", json.dumps(request).encode())
    report = sandbox.report_file(f"{stem}.report.json")
    result = sandbox.run([sys.executable, "-I", str(script), str(req), str(report)], timeout=timeout(config))
    data = sandbox.read_report(report.name, _MAX_REPORT)
    if result.exit_code != 0 or result.timed_out or data is None:
        return result, None
    try:
        return result, json.loads(data)
    except (ValueError, RecursionError):
        return result, None


def _files(tree: Path) -> list[str]:
    return sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file())


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
