"""The HTTP faces' fixtures (`actors` in process, `live` on a real socket: git clones through it)."""

from tests.faces.conftest import actors, live

__all__ = ["actors", "live"]
