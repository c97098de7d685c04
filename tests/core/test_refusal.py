"""A refusal's details as a reader sees them (`core.refusal_view`), and their sentences
(`core.refusal_text`): whatever the details and the read scope, nothing the reader may not
read is named — no path, no revision, no change behind it."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from studiolo.core.reasons import Reason
from studiolo.core.refusal import Change, Detail, Item, Moved
from studiolo.core.refusal_text import sentence, when
from studiolo.core.refusal_view import HIDDEN, Reader, for_audit, for_reader, named_paths

# Distinct path names no one of which is a substring of another: `d3x/f1y.txt`, `d3x/`.
_DIRS = [f"d{i}x" for i in range(4)]
_FILES = st.builds(lambda d, f: f"{d}/f{f}y.txt", st.sampled_from(_DIRS), st.integers(0, 3))
_PREFIXES = st.sampled_from([f"{d}/" for d in _DIRS])
_PATTERNS = st.lists(
    st.sampled_from(
        ["**", *(f"{d}/**" for d in _DIRS), *(f"{d}/f1y.txt" for d in _DIRS), "d1x/*", "*/f2y.txt"]
    ),
    max_size=3,
)


@st.composite
def _details(draw: st.DrawFn) -> tuple[list[Detail], dict[str, str]]:
    """Stale paths and collections, and paths named by items, each changed by its own actor."""
    actors: dict[str, str] = {}  # path → the principal that moved it

    def change(path: str) -> Change:
        actors[path] = f"prn_by{len(actors)}q"
        return Change(1.8e9, actors[path], "edit", None)

    files = draw(st.lists(_FILES, unique=True, max_size=4))
    prefixes = draw(st.lists(_PREFIXES, unique=True, max_size=2))
    named = draw(st.lists(_FILES, unique=True, max_size=3))
    moved = tuple(Moved(p, 1, 2, False, change(p)) for p in files)
    dirs = tuple(Moved(p, 4, 7, True) for p in prefixes)
    items = tuple(Item("missing_grant", {"action": "write"}, path=p) for p in named)
    reason = draw(st.sampled_from([Reason.DEPENDENCY_STALE, Reason.TARGET_BASE_STALE]))
    details = [Detail(reason, moved=moved + dirs), Detail(Reason.NOT_AUTHORIZED, items=items)]
    return details, actors


def _readable(reader: Reader, path: str) -> bool:
    return reader.tree(path) if path.endswith("/") else reader.path(path)


@given(_details(), st.one_of(st.none(), _PATTERNS))
def test_a_reader_sees_no_path_it_may_not_read(
    found: tuple[list[Detail], dict[str, str]], scope: list[str] | None
) -> None:
    details, actors = found
    reader = Reader(None if scope is None else tuple(scope), {})
    shown = for_reader(details, reader)
    text = json.dumps(shown)
    for path in named_paths(details):
        if _readable(reader, path):
            assert path in text
        elif path.endswith("/"):  # a collection: a prefix of readable paths, named as itself nowhere
            assert f'"{path}"' not in text and f"collection {path}" not in text
        else:
            assert path not in text  # neither in the fields nor in the sentences
            assert actors.get(path, "prn_none") not in text  # nor who moved it
    hidden = [m for d in shown for m in d["moved"] if m["hidden"]]
    assert all(m["note"] in HIDDEN.values() and m["declared"] is None for m in hidden)
    # The audit's form names everything.
    whole = json.dumps(for_audit(details))
    assert all(p in whole for p in named_paths(details))


def test_a_collection_is_named_only_to_who_reads_all_of_it() -> None:
    assert Reader(("src/**",)).tree("src/lib/") and Reader(("**",)).tree("secret/")
    assert not Reader(("src/*",)).tree("src/") and not Reader(("src/a.txt",)).tree("src/")
    assert not Reader(("s*/**",)).tree("src/") and not Reader(("src/**",)).tree("srcx/")


def test_the_sentence_of_a_moved_path_says_who_and_when() -> None:
    d = Detail(
        Reason.DEPENDENCY_STALE,
        moved=(Moved("src/input.txt", 1, 2, False, Change(1764859620, "prn_e", "edit")),),
    )
    (body,) = for_reader([d], Reader(None, {"prn_e": "editor"}))
    expected = "src/input.txt changed from revision 1 to 2 by editor at 2025-12-04 14:47:00 UTC"
    assert body["text"] == expected + ", since the candidate declared it."
    (hidden,) = for_reader([d], Reader(("docs/**",), {"prn_e": "editor"}))
    assert (
        hidden["text"] == "A declared dependency you may not read changed, since the candidate declared it."
    )


@given(st.floats(0, 253402300799, allow_nan=False))
def test_when_is_utc_to_the_second(at: float) -> None:
    assert when(at) == datetime.fromtimestamp(int(at), UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def test_a_sentence_is_never_empty() -> None:
    for reason in Reason:
        body: dict[str, object] = {
            "reason": reason.value,
            "facts": {},
            "items": [],
            "moved": [],
            "change": None,
        }
        assert sentence(body), reason
