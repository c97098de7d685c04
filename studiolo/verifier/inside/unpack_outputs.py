"""Inside a check, stage 2 of kind `outputs`: unpack the outputs as data, run the assertions.

    python -I unpack_outputs.py ARCHIVE OUTDIR -- ASSERTION [ARGS...]

This sandbox holds no candidate code: its working directory has only the checker's pinned
assertion files, and ARCHIVE (what stage 1 packed) is unpacked into OUTDIR (on this check's
scratch tmpfs) as regular files only — no links, devices, absolute paths or `..`. Then the
assertion replaces this process, with `STUDIOLO_OUTPUTS=OUTDIR`; its exit status is the
verdict. Assertions must treat the outputs as data: never import, unpickle or run them.
"""

from __future__ import annotations

import os
import shutil
import sys
import tarfile


def unpack(archive: str, outdir: str) -> None:
    os.makedirs(outdir, exist_ok=True)
    with tarfile.open(archive, "r:") as tar:
        for member in tar:
            name = os.path.normpath(member.name)
            if member.isdir():
                continue
            if not member.isreg() or name.startswith(("/", "..")) or "\0" in name:
                sys.exit(f"outputs: refusing archive member {member.name!r}")
            source = tar.extractfile(member)
            if source is None:
                sys.exit(f"outputs: unreadable archive member {member.name!r}")
            target = os.path.join(outdir, name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444)
            with os.fdopen(fd, "wb") as out:
                shutil.copyfileobj(source, out)


if __name__ == "__main__":
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        sys.exit("usage: unpack_outputs.py ARCHIVE OUTDIR -- ASSERTION [ARGS...]")
    try:
        unpack(sys.argv[1], sys.argv[2])
    except (OSError, tarfile.TarError, EOFError) as exc:
        sys.exit(f"outputs: the archive stage 1 left is unusable: {exc}")
    os.environ["STUDIOLO_OUTPUTS"] = sys.argv[2]
    os.execvp(sys.argv[4], sys.argv[4:])
