"""scripts/system.sh, the set-up `make run` and `make test` start with, on a machine that
lacks what Studiolo needs from the system: it installs with the package manager where it
may, and otherwise stops at once with the one command that would fix it.

The machine is simulated: PATH is a folder of links to every system command except the
ones a test takes away (bwrap, chromium, apt-get, sudo), and stand-ins for `id` and
`apt-get` say who we are and record what would be installed.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "system.sh"
HIDDEN = {"bwrap", "chromium", "apt-get", "sudo", "id"}
DB_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/given"


def _machine(tmp_path: Path, *, uid: int, apt: bool) -> dict[str, str]:
    """A PATH with the system's commands but none of HIDDEN; `id -u` answers `uid`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for folder in ("/usr/local/bin", "/usr/bin", "/bin"):
        for entry in sorted(Path(folder).iterdir()) if Path(folder).is_dir() else []:
            link = bin_dir / entry.name
            if entry.name not in HIDDEN and not link.exists():
                link.symlink_to(entry)
    _script(bin_dir / "id", f'[ "$1" = -u ] && echo {uid} || echo someone\n')
    if apt:
        # The first install fails as on a machine with no package lists; update, then install
        # makes the packages' commands appear.
        log = tmp_path / "apt.log"
        _script(
            bin_dir / "apt-get",
            f'echo "$*" >> {log}\n'
            f'case "$*" in update*) touch {tmp_path}/lists; exit 0;; esac\n'
            f"[ -e {tmp_path}/lists ] || exit 100\n"
            'for p in "$@"; do case "$p" in\n'
            f"  bubblewrap) printf '#!/bin/sh\\n' > {bin_dir}/bwrap; chmod +x {bin_dir}/bwrap;;\n"
            f"  chromium) printf '#!/bin/sh\\n' > {bin_dir}/chromium; chmod +x {bin_dir}/chromium;;\n"
            "esac; done\n",
        )
    return {"PATH": str(bin_dir), "HOME": str(tmp_path), "STUDIOLO_TEST_DATABASE_URL": DB_URL}


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def _setup(goal: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/bash", str(SCRIPT), goal], env=env, cwd=cwd, capture_output=True, text=True, timeout=60
    )


def test_a_user_who_may_not_install_is_told_the_one_command(tmp_path: Path) -> None:
    env = _machine(tmp_path, uid=1000, apt=True)
    for goal, packages in (("run", "bubblewrap"), ("test", "bubblewrap chromium")):
        done = _setup(goal, env, tmp_path)
        assert done.returncode == 1 and done.stdout == ""
        assert f"sudo apt-get update && sudo apt-get install -y {packages}" in done.stderr
    assert not (tmp_path / "apt.log").exists(), "nothing was tried without the right to install"


def test_root_installs_what_is_missing_then_names_the_test_database(tmp_path: Path) -> None:
    env = _machine(tmp_path, uid=0, apt=True)
    done = _setup("test", env, tmp_path)
    assert done.returncode == 0, done.stderr
    calls = (tmp_path / "apt.log").read_text().splitlines()
    install = "install -y -q --no-install-recommends bubblewrap chromium"
    assert calls == [install, "update -q", install], "no package lists: install, update, install"
    assert done.stdout == f"STUDIOLO_TEST_DATABASE_URL={DB_URL}\n"
    again = _setup("test", env, tmp_path)
    assert again.returncode == 0 and len((tmp_path / "apt.log").read_text().splitlines()) == 3


def test_a_machine_without_apt_names_what_is_missing(tmp_path: Path) -> None:
    env = _machine(tmp_path, uid=0, apt=False)
    done = _setup("run", env, tmp_path)
    assert done.returncode == 1 and "missing: bubblewrap" in done.stderr and "no apt-get" in done.stderr


@pytest.mark.skipif(not Path("/usr/bin/bwrap").exists(), reason="needs bubblewrap: `make test` installs it")
def test_this_machine_is_set_up(tmp_path: Path) -> None:
    """After `make test`'s own set-up nothing is missing: no install is attempted."""
    env = {k: v for k, v in os.environ.items() if k != "STUDIOLO_TEST_DATABASE_URL"} | {"HOME": str(tmp_path)}
    done = _setup("run", env, tmp_path)
    assert done.returncode == 0 and "installing" not in done.stderr, done.stderr
