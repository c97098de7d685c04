"""The verifier side: take verification work, materialize the candidate's exact tree,
run an admitted checker in a sandbox, keep the log, sign and post the receipt.

    port.py       VerifierPort: what a verifier needs from the service
    inprocess.py  the port over a Coordinator;  http.py  the port over the HTTP API
    tree.py       materialize / digest / remove a candidate tree
    workspace.py  Workspace: a check's private directory, held by flock; stale ones removed
    sandbox.py    Limits, Sandbox (isolation, per-check limits, timeout)
    isolation.py  Isolation: bubblewrap namespaces, mount view, unprivileged uid
    seccomp.py    the seccomp filter of every check: no keyrings, no nested user namespaces
    cgroups.py    per-check cgroups: memory and process limits for a whole check
    channel.py    a pipe from a check to the runner (pytest's session report)
    kind.py       the Checker interface; verdict isolation (shared / separate)
    checkers.py   the built-in kinds: command, json-schema, digest-equals, and the registry
    pytest_kind.py  kind pytest;  outputs.py  kind outputs (a verdict with no candidate code)
    inside/       programs the kinds run inside the sandbox
    runner.py     the loop: work → tree → check → log → sign → post
    keyfile.py    the verifier's private key on disk
    cli.py        `studiolo verifier run|keygen`

See docs/verifiers.md for the trust model.
"""

from typing import TYPE_CHECKING, Any

from studiolo.verifier.checkers import (
    BUILTIN_CHECKERS,
    Checker,
    CheckerConfigError,
    CheckOutcome,
    registry,
)
from studiolo.verifier.isolation import Isolation, IsolationUnavailable
from studiolo.verifier.port import VerifierPort
from studiolo.verifier.runner import ItemReport, Runner
from studiolo.verifier.sandbox import Limits, ProcessResult, Sandbox, Workspace

if TYPE_CHECKING:
    from studiolo.verifier.inprocess import InProcessPort

__all__ = [
    "BUILTIN_CHECKERS",
    "CheckOutcome",
    "Checker",
    "CheckerConfigError",
    "InProcessPort",
    "Isolation",
    "IsolationUnavailable",
    "ItemReport",
    "Limits",
    "ProcessResult",
    "Runner",
    "Sandbox",
    "VerifierPort",
    "Workspace",
    "registry",
]


def __getattr__(name: str) -> Any:
    # `InProcessPort` needs the Coordinator (SQLAlchemy); a remote verifier never loads it.
    if name == "InProcessPort":
        from studiolo.verifier.inprocess import InProcessPort

        return InProcessPort
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
