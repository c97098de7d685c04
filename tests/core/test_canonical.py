"""The canonical JSON fast path writes exactly the bytes `rfc8785` writes, or refuses alike."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import pytest
import rfc8785
from hypothesis import example, given, settings
from hypothesis import strategies as st

from studiolo.core.canonical import _plain, canonical_json

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.floats(min_value=-1e17, max_value=1e17)
    | st.text()
    | st.text(alphabet=st.characters(max_codepoint=0x7F))
    | st.sampled_from(["\ud800", "\U0001f600", "\ue000", "\x7f", '\x00\x1f\b\f\n\r\t"\\/'])
)
_keys = (
    st.text()
    | st.text(alphabet=st.characters(max_codepoint=0x7F))
    | st.sampled_from(["\U0001f600", "\uff61"])
)
_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(_keys, inner, max_size=5)
    ),
    max_leaves=30,
)


def _reference(value: Any) -> bytes | type[BaseException]:
    try:
        return rfc8785.dumps(value)
    except Exception as exc:
        return type(exc)


def _ours(value: Any) -> bytes | type[BaseException]:
    try:
        return canonical_json(value)
    except Exception as exc:
        return type(exc)


class _Color(StrEnum):
    RED = "red"


@settings(max_examples=1500, deadline=None)
@given(_json)
@example({"b": 1, "a": [True, None, "x"], "\U0001f600": 1, "\uff61": 2})
@example({"n": 2**53 - 1, "m": -(2**53) + 1, "big": 2**53})
@example({"f": 1.0, "g": 1e21, "h": -0.0, "i": 1e-05, "j": 1e16, "k": 123456789012345680.0})
@example([1796097654.4620621, -2.5, 0.1, 1e-4 * 3, 5e-324, 1.7976931348623157e308, float("nan")])
@example({1: "int key"})
@example(["\ud800"])
@example({"c": _Color.RED, _Color.RED: 1})
def test_fast_path_agrees_with_rfc8785(value: Any) -> None:
    assert _ours(value) == _reference(value)


@pytest.mark.parametrize(
    ("value", "fast"),
    [
        ({"task_id": "tsk_1", "fence": 3, "evidence": ["rcp_a"], "ok": True, "x": None}, True),
        ({"at": 1.5, "lease": 1796097654.4620621, "neg": -0.25}, True),
        ({"at": 2.0}, False),
        ({"at": 1e-07}, False),
        ({"at": float("inf")}, False),
        ({"name": "café"}, False),
        ({"n": 2**53}, False),
        ({"c": _Color.RED}, False),
        ({"k": ("a", 1)}, True),
    ],
)
def test_what_takes_the_fast_path(value: Any, fast: bool) -> None:
    assert _plain(value) is fast
    assert _ours(value) == _reference(value)
