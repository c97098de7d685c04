"""The checker kind interface: how a verifier turns a materialized tree into pass or fail.

A kind is a small class with a `kind` name and a `run` method. `run` gets the read-only
tree, the checker's config (admitted with the checker version, so it is part of what the
project trusts) and a `Sandbox` for anything that starts a process. It returns a
`CheckOutcome`; the runner adds the log header, signs and posts the receipt.

A kind also declares `verdict_isolation`: `shared` when the candidate's code runs in the
process that computes the verdict (so the candidate can forge it), `separate` only when no
candidate code ever runs where the verdict is computed. The runner signs it into every
receipt; a contract may require `separate` (docs/verifiers.md).

Raise `CheckerConfigError` for a config the kind cannot use: that is a deterministic
property of the admitted checker, so it yields a *failed* receipt saying so. Any other
exception is the verifier's own trouble and yields no receipt at all.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from studiolo.core.enums import VerdictIsolation
from studiolo.verifier.sandbox import ProcessResult, Sandbox

__all__ = [
    "CheckOutcome",
    "Checker",
    "CheckerConfigError",
    "in_tree",
    "network",
    "process_outcome",
    "read_in_tree",
    "strings",
    "timeout",
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


def process_outcome(
    result: ProcessResult, sandbox: Sandbox, summary: str | None = None, passed: bool | None = None
) -> CheckOutcome:
    if passed is None:
        passed = result.exit_code == 0 and not result.timed_out
    net = "; network: the host's (the checker's config asks for it)" if result.network else ""
    header = f"$ {' '.join(result.argv)}\n[{result.describe()}]\n[sandbox: {sandbox.describe()}{net}]\n"
    return CheckOutcome(passed, header.encode() + result.output, summary or result.describe())


def network(config: Mapping[str, Any]) -> bool:
    value = config.get("network", False)
    if not isinstance(value, bool):
        raise CheckerConfigError("'network' is true or false")
    return value


def timeout(config: Mapping[str, Any]) -> float | None:
    value = config.get("timeout")
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
        raise CheckerConfigError("'timeout' is a positive number of seconds")
    return float(value)


def strings(value: object, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CheckerConfigError(f"{what} must be a list of strings")
    return list(value)


def in_tree(tree: Path, rel: str) -> bool:
    """A regular file inside the tree, reached without leaving it."""
    path = (tree / rel).resolve()
    return tree.resolve() in path.parents and path.is_file()


def read_in_tree(tree: Path, rel: str) -> bytes | None:
    """A regular file inside the tree (no symlinks, no escaping), or None."""
    if not in_tree(tree, rel):
        return None
    path = (tree / rel).resolve()
    return None if path.stat().st_size > _MAX_READ else path.read_bytes()
