"""The oracle alone: hand-written traces, one broken fact each; and its independence."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from studiolo.eval.oracle import label_decisions

ORACLE = Path(__file__).resolve().parents[2] / "studiolo" / "eval" / "oracle.py"


def _base() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [
        {"kind": "header"},
        {"kind": "principal", "principal": "p-a"},
        {"kind": "grant", "principal": "p-a", "grant": "g-1"},
        {"kind": "principal", "principal": "p-ci", "verifier": True},
        {
            "kind": "task",
            "task": "t-1",
            "scope": ["a.py"],
            "criteria": {"suite": "suite@1"},
            "contract": "c1",
        },
        {
            "kind": "attempt",
            "task": "t-1",
            "attempt": "at-1",
            "principal": "p-a",
            "fence": 1,
            "deadline": 60.0,
        },
        {"kind": "read", "path": "a.py", "revision": 1},
        {"kind": "read", "path": "b.py", "revision": 1},
        {
            "kind": "candidate",
            "candidate": "cn-1",
            "task": "t-1",
            "attempt": "at-1",
            "digest": "d1",
            "dependency_digest": "dd1",
            "files": {"a.py": "x"},
            "reads": {"b.py": [1, 7]},
            "collections": {},
            "base_seqs": {"a.py": 6},
        },
        {
            "kind": "receipt",
            "receipt": "r-1",
            "issuer": "p-ci",
            "task": "t-1",
            "attempt": "at-1",
            "candidate_digest": "d1",
            "dependency_digest": "dd1",
            "contract": "c1",
            "criterion": "suite",
            "checker": "suite@1",
            "result": "pass",
        },
    ]
    return rows


def _decide(rows: list[dict[str, Any]], **over: Any) -> tuple[bool, tuple[str, ...]]:
    decision = {
        "kind": "decision",
        "t": 30.0,
        "caller": "p-a",
        "task": "t-1",
        "attempt": "at-1",
        "fence": 1,
        "contract": "c1",
        "candidate": "cn-1",
        "evidence": ["r-1"],
        "accepted": True,
        **over,
    }
    records = [*rows, decision]
    for n, r in enumerate(records):
        r["seq"] = n
    label = label_decisions(records)[len(records) - 1]
    return label.eligible, label.violated


def test_the_quiescent_history_is_eligible() -> None:
    assert _decide(_base()) == (True, ())


@pytest.mark.parametrize(
    ("extra", "over", "violated"),
    [
        ({"kind": "revoke", "principal": "p-a", "grant": "g-1"}, {}, "revoked"),
        ({"kind": "write", "path": "b.py"}, {}, "stale-read"),
        ({"kind": "write", "path": "a.py"}, {}, "stale-base"),
        (
            {
                "kind": "attempt",
                "task": "t-1",
                "attempt": "at-2",
                "principal": "p-b",
                "fence": 2,
                "deadline": 99.0,
            },
            {},
            "obsolete-attempt",
        ),
        ({"kind": "migrate", "task": "t-1", "contract": "c2"}, {}, "contract"),
        ({"kind": "header"}, {"t": 60.0}, "lease-expired"),
        ({"kind": "header"}, {"evidence": ["r-404"]}, "evidence-other-bytes"),
        (
            {
                "kind": "receipt",
                "receipt": "r-2",
                "issuer": "p-ci",
                "task": "t-1",
                "attempt": "at-1",
                "candidate_digest": "d1",
                "dependency_digest": "dd1",
                "contract": "c1",
                "criterion": "suite",
                "checker": "suite@1",
                "result": "fail",
            },
            {},
            "evidence-failed",
        ),
    ],
)
def test_each_broken_fact_makes_the_decision_ineligible(
    extra: dict[str, Any], over: dict[str, Any], violated: str
) -> None:
    eligible, facts = _decide([*_base(), extra], **over)
    assert not eligible
    assert violated in facts


def test_a_receipt_for_other_bytes_is_not_evidence() -> None:
    rows = _base()
    rows[-1] = {**rows[-1], "candidate_digest": "d0"}  # the verifier observed a draft
    eligible, facts = _decide(rows)
    assert (eligible, facts) == (False, ("evidence-other-bytes", "evidence-missing"))


def test_a_regrant_restores_authorization_and_a_later_write_elsewhere_is_harmless() -> None:
    rows = [
        *_base(),
        {"kind": "revoke", "principal": "p-a", "grant": "g-1"},
        {"kind": "grant", "principal": "p-a", "grant": "g-2"},
        {"kind": "write", "path": "c.py"},
    ]
    assert _decide(rows) == (True, ())


def test_a_collection_read_is_stale_after_any_write_under_it() -> None:
    rows = _base()
    rows[8] = {**rows[8], "reads": {}, "collections": {"pkg/": [3, 7]}}
    assert _decide([*rows, {"kind": "write", "path": "pkg/deep/x.py"}])[1] == ("stale-read",)
    assert _decide([*rows, {"kind": "write", "path": "pkgs/x.py"}]) == (True, ())


def test_the_oracle_imports_nothing_of_studiolo() -> None:
    tree = ast.parse(ORACLE.read_text())
    imported = [
        n.module if isinstance(n, ast.ImportFrom) else a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in (n.names if isinstance(n, ast.Import) else [n])  # type: ignore[attr-defined]
    ]
    assert imported and not [m for m in imported if m and m.startswith("studiolo")]
