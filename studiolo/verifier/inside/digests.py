"""Inside a check: the SHA-256 of named files. Standard library only.

    python -I digests.py REQUEST REPORT

REQUEST (JSON): ["dist/app.bin", ...] (relative to the working directory, the tree).
REPORT gets {"dist/app.bin": "sha256:…" or null when it is not a readable regular file}.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys


def main(request_path: str, report_path: str) -> None:
    with open(request_path, "rb") as f:
        paths = json.load(f)
    with open(report_path, "w", encoding="utf-8") as f:
        json.dump({p: digest(p) for p in paths}, f)


def digest(path: str) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        h = hashlib.sha256()
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
