"""`python bench/a2a.py`: the price of the contract over A2A (see _a2a_bench.py).

This file's name would shadow the `a2a` package (the a2a-sdk) for a script run from this
directory, so it only drops its directory from `sys.path` and runs the benchmark.
"""

import runpy
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
runpy.run_path(str(_HERE / "_a2a_bench.py"), run_name="__main__")
