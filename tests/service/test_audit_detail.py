"""Retention of audit detail (docs/operations.md, "Retention and deletion"; docs/concepts.md,
"The audit chain"): events after meta `detail_split` are hashed over the digest of their
detail, so a sweep may replace an aged event's `data` by a redaction marker (the digest,
who, when, why) and `studiolo audit verify` still passes; tampering with a present detail or
with a marker's digest is found, by Studiolo and by the independent checker."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from studiolo.core.canonical import digest_json
from studiolo.core.model import Event
from studiolo.store.audit import GENESIS, REDACTED, detail_hash, verify_log
from tests.scale.checker import Findings
from tests.scale.checker import _chain as independent_chain
from tests.world import FakeClock, World, build_world

DAY = 86400.0


def _events(w: World) -> list[Event]:
    return w.coord.store.read(lambda tx: list(tx.audit.iter_all()))


def _rows(w: World) -> tuple[list[dict[str, Any]], dict[str, tuple[int, str]], int]:
    """What the independent checker reads: the events as plain dicts, the heads, the split."""

    def read(tx: Any) -> tuple[list[dict[str, Any]], dict[str, tuple[int, str]], int]:
        events = [
            {
                "seq": e.seq, "project_id": e.project_id, "kind": e.kind, "actor": e.actor,
                "subject": e.subject, "data": dict(e.data), "at": e.at, "prev_hash": e.prev_hash,
                "hash": e.hash,
            }
            for e in tx.audit.iter_all()
        ]  # fmt: skip
        return events, tx.audit.heads(), int(tx.meta.get("detail_split") or "0")

    return w.coord.store.read(read)


def _independent(w: World) -> list[str]:
    events, heads, detail_split = _rows(w)
    found = Findings()
    independent_chain(events, 0, heads, found, detail_split)
    return found.problems


def _tamper(w: World, sql: str, **params: Any) -> None:
    with w.coord.store.engine.begin() as conn:
        conn.execute(text(sql), params)


def test_aged_detail_is_redacted_and_the_chain_still_verifies(store_url: str, tmp_path: Path) -> None:
    clock = FakeClock()
    w = build_world(tmp_path, clock, store_url)
    c = w.coord
    old_task = w.new_task("an old task")
    held_task = w.new_task("a task under a hold")
    c.place_hold(w.admin, w.project_id, held_task.id, "dispute 12")
    clock.advance(40 * DAY)
    young = w.new_task("a young task")
    c.set_retention(w.admin, w.project_id, {"audit_detail": 30 * DAY})
    before = {e.seq: e for e in _events(w)}

    (report,) = c.sweep_retention(w.admin, w.project_id)
    n = report.swept["audit_detail"]
    after = {e.seq: e for e in _events(w)}
    redacted = [e for e in after.values() if REDACTED in e.data]
    assert n == len(redacted) > 0
    for e in redacted:
        marker = e.data[REDACTED]
        assert e.project_id == w.project_id and e.at < clock() - 30 * DAY
        assert marker["digest"] == digest_json(dict(before[e.seq].data))  # the digest stays
        assert marker["by"] == "retention" and "audit detail" in marker["reason"] and marker["at"] == clock()
        assert e.hash == before[e.seq].hash  # the chain is untouched
    subjects = {e.subject for e in redacted}
    assert old_task.id in subjects and held_task.id not in subjects and young.id not in subjects
    for e in before.values():  # the held task's events keep their detail, whatever their age
        if e.subject == held_task.id or held_task.id in str(e.data):
            assert REDACTED not in after[e.seq].data
    (swept,) = [e for e in after.values() if e.kind == "retention.swept"]
    assert swept.data["swept"] == {"audit_detail": n} and swept.actor == w.admin.id  # audited
    assert c.verify_audit().ok and _independent(w) == []
    assert c.sweep_retention(w.admin, w.project_id)[0].swept == {}  # nothing more to take
    assert c.retention(w.admin, w.project_id).swept["audit_detail"] == n

    victim = redacted[0]
    forged = {REDACTED: {**victim.data[REDACTED], "digest": digest_json({"x": 1})}}
    _tamper(w, "UPDATE events SET data = :d WHERE seq = :s", d=_dumps(forged), s=victim.seq)
    report_forged = c.verify_audit()
    assert not report_forged.ok and report_forged.first_bad_seq == victim.seq and _independent(w) != []
    _tamper(w, "UPDATE events SET data = :d WHERE seq = :s", d=_dumps(dict(victim.data)), s=victim.seq)
    assert c.verify_audit().ok
    present = next(e for e in after.values() if REDACTED not in e.data and e.data and e.seq > 1)
    _tamper(
        w, "UPDATE events SET data = :d WHERE seq = :s", d=_dumps({**present.data, "x": 1}), s=present.seq
    )
    assert not c.verify_audit().ok and _independent(w) != []
    w.coord.store.dispose()


def test_a_project_hold_keeps_every_detail(tmp_path: Path) -> None:
    clock = FakeClock()
    w = build_world(tmp_path, clock)
    w.new_task()
    w.coord.place_hold(w.admin, w.project_id, None, "regulator")
    clock.advance(2 * DAY)
    w.coord.set_retention(w.admin, w.project_id, {"audit_detail": DAY})
    assert w.coord.sweep_retention(w.admin, w.project_id)[0].swept == {}
    assert not [e for e in _events(w) if REDACTED in e.data]


def _dumps(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"), sort_keys=True)


# the rule itself, on random chains ---------------------------------------------------------
_DATA = st.dictionaries(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6),
    st.one_of(st.integers(-(2**53) + 1, 2**53 - 1), st.text(max_size=8), st.booleans(), st.none()),
    max_size=4,
)
_EVENT = st.tuples(st.sampled_from(["prj_a", "prj_b", None]), st.sampled_from(["x.one", "x.two"]), _DATA)


def _build(
    specs: list[tuple[str | None, str, dict[str, Any]]],
) -> tuple[list[Event], dict[str, tuple[int, str]]]:
    heads: dict[str, tuple[int, str]] = {}
    out = []
    for seq, (project, kind, data) in enumerate(specs, start=1):
        chain = project or ""
        prev = heads.get(chain, (0, GENESIS))[1]
        at = 1000.0 + seq / 8
        digest = detail_hash(prev, seq, project, kind, None, "s", at, digest_json(data))
        out.append(Event(seq, project, kind, None, "s", data, at, prev, digest))
        heads[chain] = (seq, digest)
    return out, heads


def _as_rows(events: list[Event]) -> list[dict[str, Any]]:
    keys = ("seq", "project_id", "kind", "actor", "subject", "data", "at", "prev_hash", "hash")
    return [{k: getattr(e, k) for k in keys} for e in events]


def _redact(e: Event) -> Event:
    marker = {"digest": digest_json(dict(e.data)), "at": 2000.0, "by": "retention", "reason": "aged"}
    return replace(e, data={REDACTED: marker})


def _both_pass(events: list[Event], heads: dict[str, tuple[int, str]]) -> tuple[bool, bool]:
    found = Findings()
    independent_chain(_as_rows(events), 0, heads, found, 0)
    return verify_log(events, 0, heads, 0).problem == "", not found.problems


@settings(max_examples=60, deadline=None)
@given(st.lists(_EVENT, min_size=1, max_size=12), st.data())
def test_any_redaction_verifies_and_any_tampering_fails(specs: list[Any], data: st.DataObject) -> None:
    events, heads = _build(specs)
    chosen = data.draw(st.sets(st.integers(0, len(events) - 1)))
    events = [_redact(e) if i in chosen else e for i, e in enumerate(events)]
    assert _both_pass(events, heads) == (True, True)

    i = data.draw(st.integers(0, len(events) - 1))
    e = events[i]
    if REDACTED in e.data:  # a marker's digest changed
        marker = {**e.data[REDACTED], "digest": digest_json({"forged": i})}
        tampered = replace(e, data={REDACTED: marker})
    else:  # a present detail changed
        tampered = replace(e, data={**e.data, "forged": True})
    events[i] = tampered
    assert _both_pass(events, heads) == (False, False)
