"""`python bench/http.py`: completions/s over HTTP vs a no-op endpoint (see _http_bench.py).

This file's name would shadow the standard library's `http` package for a script run from
this directory, so it only drops its directory from `sys.path` and runs the benchmark.
"""

import runpy
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
runpy.run_path(str(_HERE / "_http_bench.py"), run_name="__main__")
