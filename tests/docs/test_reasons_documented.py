"""Every reason code the package can raise is documented in docs/reasons.md."""

from __future__ import annotations

import re
from pathlib import Path

import studiolo
from studiolo.core.reasons import OTHER_REASONS, Reason

ROOT = Path(studiolo.__file__).parent
DOC = ROOT.parent / "docs" / "reasons.md"


def _raised_in_source() -> set[str]:
    found: set[str] = set()
    for path in ROOT.rglob("*.py"):
        found.update(re.findall(r'reason="([a-z_]+)"', path.read_text()))
        found.update(re.findall(r'default_reason = "([a-z_]+)"', path.read_text()))
    return found


def _documented() -> set[str]:
    return set(re.findall(r"^### `([a-z_]+)`", DOC.read_text(), flags=re.M))


def test_every_reason_code_is_documented() -> None:
    codes = {r.value for r in Reason} | set(OTHER_REASONS) | _raised_in_source()
    missing = sorted(codes - _documented())
    assert not missing, f"undocumented reason codes: {missing}"


def test_the_completion_predicates_are_documented_in_order() -> None:
    text = DOC.read_text()
    positions = [text.index(f"### `{r.value}`") for r in Reason]
    assert positions == sorted(positions)
