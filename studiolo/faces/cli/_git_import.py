"""The client side of `studiolo git import`: read the tree, refuse or skip what Studiolo
cannot hold, upload the blobs one at a time (bounded memory, a progress bar), then one
import request: nothing changes in the ledger until that request commits."""

from __future__ import annotations

import sys

from studiolo._exceptions import InvalidRequest
from studiolo.client import Client
from studiolo.core.model import FileMode

__all__ = ["run_import"]


def run_import(
    c: Client,
    location: str,
    ref: str,
    project: str | None,
    skip_unsupported: bool,
    max_file_bytes: int,
    *,
    quiet: bool = False,
) -> dict[str, object]:
    from rich.progress import Progress

    from studiolo.git.source import open_source, read_tree

    with open_source(location) as repo:
        tree = read_tree(repo, ref, max_file_bytes)
        if tree.refused and not skip_unsupported:
            listed = "\n".join(f"  {path!r}: {why}" for path, why in tree.refused)
            raise InvalidRequest(
                f"{len(tree.refused)} entries of {tree.commit} cannot be imported (nothing was changed;"
                f" --skip-unsupported imports the rest):\n{listed}"
            )
        files: dict[str, tuple[str, FileMode]] = {}
        with Progress(disable=quiet or not sys.stderr.isatty(), transient=True) as progress:
            bar = progress.add_task("uploading", total=sum(e.size for e in tree.entries) or 1)
            for entry in tree.entries:
                data = repo[entry.blob].data  # type: ignore[attr-defined]
                files[entry.path] = (c.put_blob(data).digest, entry.mode)
                progress.advance(bar, entry.size)
    source = {"commit": tree.commit, "ref": ref, "repository": location}
    out = c.git_import(files, source, project=project)
    return {
        "commit": tree.commit,
        "files": len(files),
        "version": out.version,
        "written": out.written,
        "deleted": out.deleted,
        "unchanged": out.unchanged,
        "tree_digest": out.tree_digest,
        "skipped": [list(r) for r in tree.refused],
    }
