"""`python bench/mcp_schemas.py`: inlined output schemas vs `$ref`s, for a client (see
_mcp_schemas_bench.py).

bench/mcp.py would shadow the `mcp` package for a script run from this directory, so this
file only drops its directory from `sys.path` and runs the benchmark.
"""

import runpy
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
runpy.run_path(str(_HERE / "_mcp_schemas_bench.py"), run_name="__main__")
