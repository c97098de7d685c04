"""Programs the verifier runs *inside* a check's sandbox, given to it as read-only input files.

They use the standard library (and `jsonschema`) only: the studiolo package itself need not
be importable inside the sandbox. They run with `python -I`, so neither the candidate's
tree (the working directory) nor their own directory is on `sys.path`.

    json_schema.py     validate JSON files against a schema (kind `json-schema`)
    digests.py         SHA-256 of named files (kind `digest-equals`)
    pack_outputs.py    run the candidate's program, pack what it wrote (kind `outputs`, stage 1)
    unpack_outputs.py  unpack those outputs as data, run the assertions (kind `outputs`, stage 2)
    pytest_report.py   a pytest plugin reporting each test over an inherited pipe (kind `pytest`)
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["PROGRAMS", "source"]

PROGRAMS = frozenset(
    {"json_schema.py", "digests.py", "pack_outputs.py", "unpack_outputs.py", "pytest_report.py"}
)


def source(name: str) -> bytes:
    """The bytes of one of these programs, to hand to `Sandbox.input_file`."""
    if name not in PROGRAMS:
        raise ValueError(f"no such program: {name}")
    return (Path(__file__).parent / name).read_bytes()
