"""The `outputs` checker kind: a verdict the candidate's code cannot touch.

Stage 1 runs the candidate's program in the check's sandbox; it writes its outputs, which
`inside/pack_outputs.py` packs into one archive. Stage 2 runs in a second sandbox
(`Sandbox.separate`) whose tree holds only the checker's pinned assertion files: the archive
is unpacked there as plain data and the assertions run over it. No candidate code, and no
process the candidate started, exists where the verdict is computed.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from studiolo._exceptions import InvalidPath
from studiolo.core.canonical import digest_bytes, is_digest
from studiolo.core.enums import VerdictIsolation
from studiolo.core.paths import normalize_path
from studiolo.verifier import inside
from studiolo.verifier.kind import (
    Checker,
    CheckerConfigError,
    CheckOutcome,
    network,
    process_outcome,
    read_in_tree,
    strings,
    timeout,
)
from studiolo.verifier.sandbox import ProcessResult, Sandbox

__all__ = ["OutputsChecker"]

_MAX_ARCHIVE = 256 * 1024 * 1024


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
        program = strings(config.get("run"), "outputs config 'run'")
        assertion = strings(config.get("assert"), "outputs config 'assert'")
        pinned = config.get("assertions")
        if not program or not assertion or not isinstance(pinned, Mapping) or not pinned:
            raise CheckerConfigError("outputs config needs 'run', 'assert' and 'assertions' (path → sha256)")
        files, problems = _pinned(tree, pinned)
        if problems:
            return CheckOutcome(False, "\n".join(problems).encode() + b"\n", problems[0])
        first = self._produce(program, config, sandbox)
        if first.exit_code != 0 or first.timed_out:
            return process_outcome(first, sandbox, f"the program: {first.describe()}", False)
        archive = sandbox.read_report("outputs.tar", sandbox.limits.file_bytes or _MAX_ARCHIVE)
        if archive is None:
            return process_outcome(first, sandbox, "the program's outputs are not a regular file", False)
        with sandbox.separate(files) as judge:
            second = self._judge(assertion, archive, config, judge)
        log = process_outcome(first, sandbox).log + b"\n--- assertions (no candidate code) ---\n"
        judged = process_outcome(second, sandbox, f"the assertions: {second.describe()}")
        return CheckOutcome(judged.passed, log + judged.log, judged.summary)

    @staticmethod
    def _produce(program: list[str], config: Mapping[str, Any], sandbox: Sandbox) -> ProcessResult:
        script = sandbox.input_file("pack_outputs.py", inside.source("pack_outputs.py"))
        archive = sandbox.report_file("outputs.tar")
        outdir = sandbox.scratch / "outputs"
        argv = [sys.executable, "-I", str(script), str(outdir), str(archive), "--", *program]
        return sandbox.run(argv, timeout=timeout(config), network=network(config))

    @staticmethod
    def _judge(
        assertion: list[str], archive: bytes, config: Mapping[str, Any], judge: Sandbox
    ) -> ProcessResult:
        script = judge.input_file("unpack_outputs.py", inside.source("unpack_outputs.py"))
        packed = judge.input_file("outputs.tar", archive)
        outdir = judge.scratch / "outputs"
        argv = [sys.executable, "-I", str(script), str(packed), str(outdir), "--", *assertion]
        return judge.run(argv, timeout=timeout(config))


def _pinned(tree: Path, pinned: Mapping[str, Any]) -> tuple[dict[str, bytes], list[str]]:
    """The assertion files, read from the tree and checked against their pinned digests."""
    files: dict[str, bytes] = {}
    problems = []
    for path, digest in sorted(pinned.items()):
        if not isinstance(path, str) or not is_digest(digest) or not _normal(path):
            raise CheckerConfigError(f"outputs: assertion {path!r} needs a normal path and a sha256 digest")
        data = read_in_tree(tree, path)
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
