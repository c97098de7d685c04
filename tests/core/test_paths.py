from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from studiolo import InvalidPath
from studiolo.confined import UntrustedResponse, confined_path
from studiolo.core.paths import (
    ancestor_files,
    ancestors,
    file_dir_conflicts,
    is_git_segment,
    matches,
    normalize_path,
    normalize_prefix,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("src/a.py", "src/a.py"),
        ("/src/a.py", "src/a.py"),
        ("src//a.py", "src/a.py"),
        ("./src/./a.py", "src/a.py"),
        ("src\\a.py", "src/a.py"),
        ("src/a.py/", "src/a.py"),
        ("cafe\u0301.txt", "café.txt"),  # NFD → NFC: two spellings, one path
    ],
)
def test_aliases_collapse(raw: str, expected: str) -> None:
    assert normalize_path(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "/",
        ".",
        "../etc/passwd",
        "src/../secret",
        "a/\x00b",
        "a\nb",
        "a/\x1bb",
        "x" * 2000,
        "a/" + "y" * 300,
    ],
)
def test_hostile_paths_rejected(raw: str) -> None:
    with pytest.raises(InvalidPath) as err:
        normalize_path(raw)
    assert err.value.reason == "invalid_path"
    assert err.value.status == 400


def test_prefixes_and_ancestors() -> None:
    assert normalize_prefix("src") == "src/"
    assert normalize_prefix("/src/pkg/") == "src/pkg/"
    assert normalize_prefix("") == ""
    assert ancestors("a/b/c.txt") == ["", "a/", "a/b/"]
    assert ancestors("top.txt") == [""]


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("src/**", "src/a.py", True),
        ("src/**", "src/pkg/deep/a.py", True),
        ("src/**", "srcx/a.py", False),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/pkg/a.py", False),
        ("**", "anything/at/all", True),
        ("docs/readme.md", "docs/readme.md", True),
        ("docs/readme.md", "docs/readme.mdx", False),
        ("scratch/**", "prod/app.py", False),
    ],
)
def test_scope_patterns(pattern: str, path: str, hit: bool) -> None:
    assert matches(pattern, path) is hit


_segment = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cf", "Cs"), blacklist_characters="/\\"),
    min_size=1,
    max_size=8,
).filter(lambda s: s not in (".", "..") and not is_git_segment(s))


@given(st.lists(_segment, min_size=1, max_size=5), st.sampled_from(["", "/", "./"]))
def test_normalization_is_idempotent_and_spelling_free(segs: list[str], lead: str) -> None:
    canonical = normalize_path("/".join(segs))
    assert normalize_path(canonical) == canonical
    assert normalize_path(lead + "//".join(segs)) == canonical
    assert not canonical.startswith("/") and "//" not in canonical


# Every spelling under which some file system opens `.git` (issue 32, finding 9): the server
# accepted the NTFS ones, which every client refuses, so a writer could make checkouts fail.
_GIT_SPELLINGS = [
    ".git",
    ".GIT",
    ".Git.",
    ".git ",
    ".git::$INDEX_ALLOCATION",
    ".git:stream",
    "GIT~1",
    "git~2",
    ".g\u200cit",
    ".g\u200dit",  # the zero-width joiner is allowed in paths (emoji), and HFS+ ignores it
    "\ufeff.git",
]


@pytest.mark.parametrize("segment", _GIT_SPELLINGS)
def test_the_server_refuses_every_spelling_of_dot_git(segment: str) -> None:
    assert is_git_segment(segment)
    for raw in (f"{segment}/config", f"src/{segment}/hooks/pre-commit", segment):
        with pytest.raises(InvalidPath):
            normalize_path(raw)


_near_segment = st.text(
    alphabet=st.sampled_from([".", "g", "G", "i", "I", "t", "T", "~", "1", ":", " ", "$", "\u200d", "x"]),
    min_size=1,
    max_size=8,
)


@given(_near_segment)
def test_the_server_stores_exactly_the_paths_its_clients_accept(segment: str) -> None:
    """One rule on both sides: a path the server normalizes to itself is one a client writes."""
    raw = f"src/{segment}/config"
    try:
        stored = normalize_path(raw)
    except InvalidPath:
        return
    assert confined_path(stored) == stored


@given(_near_segment)
def test_a_client_refuses_what_the_server_would_refuse(segment: str) -> None:
    raw = f"src/{segment}/config"
    try:
        normalize_path(raw)
        refused = False
    except InvalidPath:
        refused = True
    if refused:
        with pytest.raises(UntrustedResponse):
            confined_path(raw)


def test_file_dir_conflicts_pairs_a_file_with_the_files_under_it() -> None:
    assert ancestor_files("a/b/c") == ["a", "a/b"] and ancestor_files("a") == []
    assert file_dir_conflicts(["a", "a/b", "a/b/c", "ab/c", "x"]) == [
        ("a", "a/b"),
        ("a", "a/b/c"),
        ("a/b", "a/b/c"),
    ]
    assert file_dir_conflicts(["a/b", "a/c", "b"]) == []
