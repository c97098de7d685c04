"""Background workers: threads the service starts beside its faces, each driving work the
ledger holds through the door (never a face, never the store directly).

- `workers.a2a`: the A2A requester, which sends, polls and finalizes every delegation to a
  remote agent (docs/a2a.md).
- `workers.retention`: the retention sweeper, which deletes expired evidence on a timer
  (docs/operations.md, "Retention and deletion").

The git projector's thread stays with the rest of git in `studiolo/git/projector.py` (nothing
outside `git/` runs git)."""
