"""The operations' functions, split by concept, each registered under its row's name
(`operation`). Each: parse → call the Coordinator → render."""

from studiolo.api import requests

requests.build_all()  # before any function declares a body (see `build_all`)

from studiolo.faces.http.routes import (  # noqa: E402, F401 - imported to register their functions
    admin,
    completion,
    content,
    events,
    evidence,
    git,
    ops,
    remote,
    retention,
    work,
)
