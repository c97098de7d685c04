"""A seccomp filter for every check: no kernel keyrings, no nested user namespaces.

Installed by bubblewrap (`--seccomp FD`) just before the checker's first process starts, so
it holds for everything the check runs and cannot be removed from inside:

- `keyctl`, `add_key` and `request_key` fail with EPERM. Kernel keyrings are keyed by uid,
  not by namespace, so a check that could use them would share uid 65534's user keyring
  with every other check and with host processes running as nobody (issue 32, finding 6).
  With the calls refused, each check's keyring is empty and its own: nothing it stores
  survives it, nothing another check stored is reachable.
- `unshare` and `clone` with `CLONE_NEWUSER` fail with EPERM, and `clone3` (whose flags
  live in memory a filter cannot read) with ENOSYS, so the C library falls back to `clone`.
  A check cannot make the user namespace (and, through it, the mount and other
  namespaces) that most kernel escapes start from (finding 7). Where the verifier is not
  root, bubblewrap's `--disable-userns` holds as well.
- a system call of a foreign ABI (i386 `int 0x80`, x32) kills the process: the numbers
  above are those of the native ABI only, so another ABI would slip past them.

`program()` returns the filter as the bytes of a `struct sock_filter[]` for this machine,
or None on an architecture this module does not know (the sandbox says so in every log).
"""

from __future__ import annotations

import errno
import platform
import struct
from dataclasses import dataclass

__all__ = ["Syscalls", "program"]

# classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h)
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_KILL_PROCESS = 0x80000000
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (arg0's low word, little-endian)
_CLONE_NEWUSER = 0x10000000
_X32_BIT = 0x40000000


@dataclass(frozen=True)
class Syscalls:
    """The native ABI of one architecture: its audit id and the numbers the filter names."""

    arch: int
    keyring: tuple[int, ...]  # keyctl, add_key, request_key
    unshare: int
    clone: int
    clone3: int


_ARCHES = {
    "x86_64": Syscalls(0xC000003E, (250, 248, 249), 272, 56, 435),
    "aarch64": Syscalls(0xC00000B7, (219, 217, 218), 97, 220, 435),
}


def program(machine: str | None = None) -> bytes | None:
    """The filter for `machine` (default: this one), as bubblewrap's `--seccomp` reads it."""
    calls = _ARCHES.get(machine or platform.machine())
    return None if calls is None else b"".join(struct.pack("=HBBI", *i) for i in _instructions(calls))


def _instructions(c: Syscalls) -> list[tuple[int, int, int, int]]:
    """The program, assembled from jumps to labels (classic BPF jumps only forward)."""
    jumps: list[tuple[int, int, str]] = []  # (opcode, k, label when true)
    if c.arch == _ARCHES["x86_64"].arch:
        jumps.append((_JGE_K, _X32_BIT, "kill"))
    jumps += [(_JEQ_K, nr, "eperm") for nr in c.keyring]
    jumps += [(_JEQ_K, c.clone3, "enosys"), (_JEQ_K, c.unshare, "flags"), (_JEQ_K, c.clone, "flags")]
    head = [(_LD_W_ABS, 0, 0, _ARCH), (_JEQ_K, 1, 0, c.arch), (_RET_K, 0, 0, _RET_KILL_PROCESS)]
    head.append((_LD_W_ABS, 0, 0, _NR))
    labels = {"flags": 1, "eperm": 3, "enosys": 5, "kill": 6}  # after the jumps and the first allow
    code = head + [(op, len(jumps) - i + labels[to] - 1, 0, k) for i, (op, k, to) in enumerate(jumps)]
    return [
        *code,
        (_RET_K, 0, 0, _RET_ALLOW),
        (_LD_W_ABS, 0, 0, _ARG0),  # flags: unshare/clone asking for a user namespace?
        (_JSET_K, 0, 1, _CLONE_NEWUSER),
        (_RET_K, 0, 0, _RET_ERRNO | errno.EPERM),  # eperm
        (_RET_K, 0, 0, _RET_ALLOW),
        (_RET_K, 0, 0, _RET_ERRNO | errno.ENOSYS),  # enosys
        (_RET_K, 0, 0, _RET_KILL_PROCESS),  # kill
    ]
