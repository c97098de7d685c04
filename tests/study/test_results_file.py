"""results.json: deterministic bytes, the shipped file, and the byte-for-byte check."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path

from studiolo.study import (
    StudyResult,
    check_results,
    render_results,
    shipped_results,
    source_digest,
)
from studiolo.study.provenance import package_dir


def test_rendering_is_deterministic_and_canonical(study_result: StudyResult) -> None:
    data = render_results(study_result)
    assert data == render_results(study_result)
    assert data.endswith(b"}\n") and not data.endswith(b"\n\n")
    document = json.loads(data)
    again = json.dumps(document, sort_keys=True, indent=2, separators=(",", ": ")) + "\n"
    assert again.encode() == data
    text = data.decode("ascii")
    assert "/work" not in text and str(Path.home()) not in text
    assert not re.search(r"\d{4}-\d{2}-\d{2}", text), "no timestamps"


def test_document_records_what_the_study_promises(study_result: StudyResult) -> None:
    document = json.loads(render_results(study_result))
    assert document["mode"] == "model"
    assert document["source_digest"] == source_digest()
    assert document["executions"]["primary"] == 87022
    assert document["executions"]["negative_controls"] == 91
    assert document["oracle"] == {"eligible": 470, "ineligible": 6224}
    assert document["schedules"]["ok"] is True
    assert document["published"]["all_match"] is True
    assert document["reproduced"] is True
    split = next(m for m in document["mechanisms"] if m["mechanism"] == "split-preflight")
    assert ["read", "candidate", "trusted-verify", "preflight", "artifact-edit", "commit"] in (
        split["counterexamples"]["unsafe_accept"]
    )
    control = document["negative_controls"][-1]
    assert control["control"] == "inadequate-checker"
    assert control["outcomes"]["full-atomic"] == "accept"


def test_the_shipped_file_is_byte_identical(study_result: StudyResult) -> None:
    outcome = check_results(shipped_results(), result=study_result)
    assert outcome.ok, outcome.message
    assert outcome.message.startswith("OK ")


def test_one_changed_byte_fails_the_check(study_result: StudyResult, tmp_path: Path) -> None:
    data = bytearray(shipped_results().read_bytes())
    position = data.index(b'"safe_reject": 5506')
    data[position + len(b'"safe_reject": 550')] = ord("7")
    copy = tmp_path / "results.json"
    copy.write_bytes(bytes(data))
    outcome = check_results(copy, result=study_result)
    assert not outcome.ok
    assert outcome.difference is not None
    assert outcome.difference.found.endswith("5507,")
    assert f"line {outcome.difference.line}" in outcome.message
    assert outcome.source_digest_differs is False
    assert "changed after it was made" in outcome.message


def test_a_different_source_digest_fails_the_check(study_result: StudyResult, tmp_path: Path) -> None:
    edited = tmp_path / "study"
    shutil.copytree(package_dir(), edited, ignore=shutil.ignore_patterns("__pycache__"))
    (edited / "oracle.py").write_text(
        (edited / "oracle.py").read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8"
    )
    other = dataclasses.replace(study_result, source_digest=source_digest(edited))
    assert other.source_digest != study_result.source_digest
    outcome = check_results(shipped_results(), result=other)
    assert not outcome.ok
    assert outcome.source_digest_differs is True
    assert "source digest differs" in outcome.message


def test_source_digest_ignores_results_and_caches(tmp_path: Path) -> None:
    copy = tmp_path / "study"
    shutil.copytree(package_dir(), copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = source_digest(copy)
    assert before == source_digest()
    (copy / "results.json").write_text("{}\n", encoding="utf-8")
    (copy / "__pycache__").mkdir()
    (copy / "__pycache__" / "oracle.cpython-311.pyc").write_bytes(b"\0")
    assert source_digest(copy) == before
    (copy / "new_module.py").write_text("", encoding="utf-8")
    assert source_digest(copy) != before


def test_a_missing_file_fails_clearly(study_result: StudyResult, tmp_path: Path) -> None:
    outcome = check_results(tmp_path / "absent.json", result=study_result)
    assert not outcome.ok
    assert "cannot read" in outcome.message
