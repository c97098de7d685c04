"""`via`: a method of the door that is one of its services' methods, with its signature.

`Coordinator.claim = via("work", WorkOps.claim)`: `coordinator.claim(...)` is
`coordinator.work.claim(...)`, typed as `WorkOps.claim` is, documented by its docstring."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

__all__ = ["via"]

P = ParamSpec("P")
R = TypeVar("R")


class _Via(Generic[P, R]):
    def __init__(self, service: str, method: Callable[Concatenate[Any, P], R]) -> None:
        self.service = service
        self.method = method
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Callable[Concatenate[Any, P], R]: ...

    @overload
    def __get__(self, obj: object, owner: type[Any]) -> Callable[P, R]: ...

    def __get__(self, obj: object | None, owner: type[Any]) -> Callable[..., R]:
        if obj is None:
            return self.method  # on the class: the service's function (its name, docstring)
        bound: Callable[P, R] = getattr(getattr(obj, self.service), self.method.__name__)
        return bound


def via(service: str, method: Callable[Concatenate[Any, P], R]) -> _Via[P, R]:
    """The door's method `method.__name__`, answered by the service in attribute `service`."""
    return _Via(service, method)
