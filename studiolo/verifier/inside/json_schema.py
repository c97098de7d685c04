"""Inside a check: validate JSON files against a schema. Standard library and jsonschema only.

    python -I json_schema.py REQUEST REPORT

REQUEST (JSON): {"schema": "<path of the schema's bytes>", "files": ["data/a.json", ...]}
(file paths relative to the working directory, the candidate's tree). REPORT gets
{"misconfigured": "why"} or {"problems": {"data/a.json": ["/name: 3 is not ...", ...]}}.
Deeply nested documents, huge numbers and slow patterns are the sandbox's business: a
RecursionError is a problem of that file; a timeout or memory limit ends the check.
"""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any

_MAX_ERRORS = 50
_MAX_MESSAGE = 500


def main(request_path: str, report_path: str) -> None:
    with open(request_path, "rb") as f:
        request = json.load(f)
    report = check(request["schema"], request["files"])
    with open(report_path, "w", encoding="utf-8") as f:
        json.dump(report, f)


def check(schema_path: str, files: list[str]) -> dict[str, Any]:
    jsonschema: Any = importlib.import_module("jsonschema")  # untyped; only here, inside the check

    try:
        with open(schema_path, "rb") as f:
            schema = json.load(f)
    except (ValueError, RecursionError) as exc:
        return {"misconfigured": f"the schema is not JSON: {_short(exc)}"}
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        validator = cls(schema)
    except jsonschema.SchemaError as exc:
        return {"misconfigured": f"the schema is invalid: {_short(exc.message)}"}
    except (RecursionError, TypeError, ValueError) as exc:
        return {"misconfigured": f"the schema is unusable: {_short(exc)}"}
    return {"problems": {path: _problems(validator, path) for path in files}}


def _problems(validator: Any, path: str) -> list[str]:
    try:
        with open(path, "rb") as f:
            instance = json.load(f)
    except (ValueError, RecursionError) as exc:
        return [f"not JSON: {_short(exc)}"]
    try:
        found = sorted(validator.iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path])
    except RecursionError:
        return ["too deeply nested to validate"]
    return [
        f"/{'/'.join(map(str, e.absolute_path))}: {_short(e.message)}"[: 2 * _MAX_MESSAGE]
        for e in found[:_MAX_ERRORS]
    ]


def _short(value: object) -> str:
    text = str(value)
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE] + "…"


if __name__ == "__main__":
    sys.setrecursionlimit(10_000)
    main(sys.argv[1], sys.argv[2])
