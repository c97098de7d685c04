"""Inside a check, stage 1 of kind `outputs`: run the candidate's program, pack what it wrote.

    python -I pack_outputs.py OUTDIR ARCHIVE -- PROGRAM [ARGS...]

Makes OUTDIR (on the check's scratch tmpfs, so its size is bounded), runs PROGRAM in the
working directory (the candidate's tree) with `STUDIOLO_OUTPUTS=OUTDIR` and its standard
output written to `OUTDIR/stdout`, then packs OUTDIR's regular files and directories into
the tar file ARCHIVE and exits with PROGRAM's exit code.

Nothing here is trusted: the candidate's code runs beside this process and may rewrite the
archive or kill this packer. The archive is only data for stage 2, which runs elsewhere.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tarfile


def main(outdir: str, archive: str, program: list[str]) -> int:
    os.makedirs(outdir, exist_ok=True)
    env = dict(os.environ, STUDIOLO_OUTPUTS=outdir)
    with open(os.path.join(outdir, "stdout"), "wb") as out:
        code = subprocess.run(program, stdin=subprocess.DEVNULL, stdout=out, env=env, check=False).returncode
    with tarfile.open(archive, "w", format=tarfile.PAX_FORMAT) as tar:
        for root, dirs, files in os.walk(outdir):
            dirs.sort()
            for name in sorted(files):
                path = os.path.join(root, name)
                if stat.S_ISREG(os.lstat(path).st_mode):
                    tar.add(path, arcname=os.path.relpath(path, outdir), recursive=False)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        sys.exit("usage: pack_outputs.py OUTDIR ARCHIVE -- PROGRAM [ARGS...]")
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[4:]))
