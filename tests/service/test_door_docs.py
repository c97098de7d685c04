"""Every public method of the door says in its docstring what it does."""

from __future__ import annotations

import inspect

from studiolo.service import Coordinator


def _public_methods() -> dict[str, object]:
    found = {}
    for name in dir(Coordinator):
        if name.startswith("_"):
            continue
        fn = getattr(Coordinator, name)  # a service's method (`via`), a static one, or a property
        if callable(fn):
            found[name] = fn
    return found


def test_the_door_has_public_methods() -> None:
    methods = _public_methods()
    assert {"complete", "claim", "handoff", "task_view", "collect_garbage"} <= set(methods)


def test_every_public_door_method_has_a_docstring() -> None:
    missing = sorted(name for name, fn in _public_methods().items() if not (inspect.getdoc(fn) or "").strip())
    assert missing == [], f"public door methods without a docstring: {missing}"
