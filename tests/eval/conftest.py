"""A small repository of our own (any repository works, not only the shipped bundle): a
package with a unittest suite and five commits, the last after the window (human edits)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

# The shipped evaluation's repository: `shared/eval/tomli.bundle` beside the checkout or a parent.
TOMLI = next(
    (
        p / "shared" / "eval" / "tomli.bundle"
        for p in Path(__file__).resolve().parents
        if (p / "shared" / "eval" / "tomli.bundle").exists()
    ),
    Path("shared/eval/tomli.bundle"),
)

CALC = '''"""Arithmetic."""


def add(a, b):
    return a + b
'''
TEST_CALC = """import unittest

from pkg import calc


class CalcTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(calc.add(2, 3), 5)
"""


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True, text=True)
    return done.stdout.strip()


def _commit(repo: Path, message: str, files: dict[str, str]) -> str:
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="session")
def small_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(the repository, the last commit of the three-task window)."""
    repo = tmp_path_factory.mktemp("repo")
    _git(repo, "init", "-q", "-b", "main")
    _commit(
        repo,
        "base",
        {
            "pkg/__init__.py": "",
            "pkg/calc.py": CALC,
            "tests/__init__.py": "",
            "tests/test_calc.py": TEST_CALC,
        },
    )
    _commit(
        repo,
        "add mul",
        {
            "pkg/mul.py": "def mul(a, b):\n    return a * b\n",
            "tests/test_mul.py": "import unittest\n\nfrom pkg.mul import mul\n\n\n"
            "class MulTest(unittest.TestCase):\n"
            "    def test_mul(self):\n        self.assertEqual(mul(3, 4), 12)\n",
        },
    )
    _commit(repo, "add sub", {"pkg/calc.py": CALC + "\n\ndef sub(a, b):\n    return a - b\n"})
    until = _commit(
        repo,
        "square uses mul",
        {
            "pkg/calc.py": CALC.replace(
                '"""Arithmetic."""\n', '"""Arithmetic."""\n\nfrom pkg.mul import mul\n'
            )
            + "\n\ndef sub(a, b):\n    return a - b\n\n\ndef square(x):\n    return mul(x, x)\n",
            "tests/test_calc.py": TEST_CALC
            + "\n    def test_square(self):\n        self.assertEqual(calc.square(5), 25)\n",
        },
    )
    _commit(
        repo,
        "later: a docstring",
        {
            "pkg/calc.py": (repo / "pkg/calc.py")
            .read_text()
            .replace('"""Arithmetic."""', '"""Arithmetic, small."""'),
        },
    )
    return repo, until
