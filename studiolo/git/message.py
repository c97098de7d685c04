"""What a publication's commit says, as a pure function of the publication: its message
(title and `Studiolo-*` trailers), its author and committer, and the in-toto Statement its
note carries. Nothing here reads a clock or the repository."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from studiolo.core.model import Publication

__all__ = [
    "COMMITTER",
    "EMAIL_DOMAIN",
    "VSA",
    "author_of",
    "commit_message",
    "completion_statement",
    "version_of",
]

EMAIL_DOMAIN = "studiolo.invalid"  # RFC 2606: an address nobody can receive mail at
COMMITTER = ("Studiolo", f"service@{EMAIL_DOMAIN}")
VSA = "https://slsa.dev/verification_summary/v1"
_VERSION = re.compile(r"^Studiolo-Version: (\d+)$", re.MULTILINE)
_UNSAFE = re.compile(r"[\x00-\x1f\x7f<>]")

# Trailer → the publication meta key it shows, in order.
_TRAILERS = (
    ("Studiolo-Project", None),
    ("Studiolo-Task", "task"),
    ("Studiolo-Attempt", "attempt"),
    ("Studiolo-Candidate", "candidate"),
    ("Studiolo-Contract", "contract"),
    ("Studiolo-Receipt", "completion"),
    ("Studiolo-Source-Commit", "source_commit"),
    ("Studiolo-Version", None),
    ("Studiolo-Chain", None),
)


def _one_line(text: str, limit: int = 200) -> str:
    return " ".join(_UNSAFE.sub(" ", text).split())[:limit] or "(untitled)"


def commit_message(pub: Publication, chain_hash: str | None) -> str:
    """The title (the task's, for a completion) and the trailers naming what the ledger holds."""
    lines = []
    for name, key in _TRAILERS:
        if name == "Studiolo-Project":
            value: Any = pub.project_id
        elif name == "Studiolo-Version":
            value = pub.version
        elif name == "Studiolo-Chain":
            value = chain_hash
        else:
            value = pub.meta.get(key or "")
        if value is not None:
            lines.append(f"{name}: {_one_line(str(value))}")
    return f"{_one_line(str(pub.meta.get('title', pub.kind)))}\n\n" + "\n".join(lines) + "\n"


def version_of(message: str) -> int:
    """The ledger version a published commit reflects (0: not a publication's commit)."""
    found = _VERSION.findall(message)
    return int(found[-1]) if found else 0


def author_of(name: str | None, principal_id: str | None) -> tuple[str, str]:
    """(name, email) of the principal who made the change; the service for a baseline."""
    if principal_id is None:
        return COMMITTER
    return _one_line(name or principal_id, 100), f"{_one_line(principal_id, 100)}@{EMAIL_DOMAIN}"


def rfc3339(at: float) -> str:
    return datetime.fromtimestamp(int(at), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def completion_statement(
    pub: Publication, commit: str, receipt: dict[str, Any], signature: str, chain_hash: str | None
) -> dict[str, Any]:
    """The in-toto Statement of an accepted completion's commit: a SLSA verification summary
    (the service verified the commit's change against the task's contract: PASSED), with the
    completion receipt as the ledger signed it."""
    contract = str(pub.meta.get("contract", ""))
    return {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": f"{pub.project_id}@{pub.version}", "digest": {"gitCommit": commit}}],
        "predicateType": VSA,
        "predicate": {
            "verifier": {"id": "https://studiolo.invalid/completion-ledger"},
            "timeVerified": rfc3339(pub.at),
            "resourceUri": f"studiolo:project/{pub.project_id}/task/{pub.meta.get('task')}",
            "policy": {
                "uri": f"studiolo:contract/{contract}",
                "digest": {"sha256": contract.removeprefix("sha256:")},
            },
            "verificationResult": "PASSED",
            "verifiedLevels": ["STUDIOLO_COMPLETION_CONTRACT"],
            "studiolo": {
                "version": pub.version,
                "chain": chain_hash,
                "receipt": receipt,
                "signature": signature,
            },
        },
    }
