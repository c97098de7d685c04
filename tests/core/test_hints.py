"""One reason enum per kind, one hint table: docs/reasons.md, the MCP refusals and the
dashboard's explanations all come from (or are checked against) `core/hints.py`, and the
package names a reason code only through the enums."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import studiolo
from studiolo.core.hints import HINTS
from studiolo.core.reasons import ErrorReason, Reason
from studiolo.faces.mcp.refusals import HINTS as MCP_HINTS
from studiolo.faces.web.reasons import explain

PKG = Path(studiolo.__file__).parent
DOC = PKG.parent / "docs" / "reasons.md"
CODES = {r.value for r in Reason} | {r.value for r in ErrorReason}


def _sections() -> dict[str, str]:
    parts = re.split(r"^### `([a-z_]+)`\n", DOC.read_text(encoding="utf-8"), flags=re.M)
    return {code: body.split("\n## ")[0] for code, body in zip(parts[1::2], parts[2::2], strict=True)}


def _recover(section: str) -> str | None:
    text = " ".join(section.split("**Detail:**")[0].split())
    return text.split("**Recover:** ", 1)[1] if "**Recover:** " in text else None


def test_the_table_the_enums_and_the_page_name_the_same_codes() -> None:
    assert not {r.value for r in Reason} & {r.value for r in ErrorReason}
    assert set(HINTS) == CODES == set(_sections())


def test_every_recover_sentence_of_the_page_is_the_tables() -> None:
    for code, section in _sections().items():
        assert _recover(section) == HINTS[code].recover, code


def test_the_faces_show_the_tables_hints() -> None:
    assert {code: hint.brief for code, hint in HINTS.items()} == MCP_HINTS
    assert all(0 < len(h.brief) <= 100 and "\n" not in h.brief for h in HINTS.values())
    for reason in Reason:
        assert explain(reason.value) == (HINTS[reason].meaning, HINTS[reason].recover)
        assert HINTS[reason].meaning and HINTS[reason].recover


def _plain_codes(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "reason":
            value = node.value
        elif isinstance(node, ast.AnnAssign | ast.Assign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if not any(isinstance(t, ast.Name) and t.id == "default_reason" for t in targets):
                continue
            value = node.value
        else:
            continue
        if isinstance(value, ast.Constant) and value.value in CODES:
            found.append((node.lineno if hasattr(node, "lineno") else 0, value.value))
    return found


def test_no_reason_code_is_a_plain_string_in_the_package() -> None:
    offenders = [
        f"{path.relative_to(PKG)}:{line}: {code}"
        for path in sorted(PKG.rglob("*.py"))
        for line, code in _plain_codes(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert not offenders, offenders


def test_the_scan_finds_a_plain_string_code() -> None:
    planted = 'raise Conflict("x", reason="conflict")\nclass E:\n    default_reason: str = "not_found"\n'
    assert sorted(code for _, code in _plain_codes(ast.parse(planted))) == ["conflict", "not_found"]
