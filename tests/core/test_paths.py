from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from studiolo import InvalidPath
from studiolo.core.paths import ancestors, matches, normalize_path, normalize_prefix


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
).filter(lambda s: s not in (".", ".."))


@given(st.lists(_segment, min_size=1, max_size=5), st.sampled_from(["", "/", "./"]))
def test_normalization_is_idempotent_and_spelling_free(segs: list[str], lead: str) -> None:
    canonical = normalize_path("/".join(segs))
    assert normalize_path(canonical) == canonical
    assert normalize_path(lead + "//".join(segs)) == canonical
    assert not canonical.startswith("/") and "//" not in canonical
