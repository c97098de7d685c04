"""The git projection of the ledger (docs/git.md): every change to a project's artifacts
becomes one commit in a bare repository Studiolo owns. The ledger is the authority; this
package only reads it (the publication log), and nothing outside it speaks git.

Modules: `repository` (a bare repository through pygit2), `objects` (a pass's objects in
memory, written as one pack), `message` (a publication's commit message and note
statement), `dsse` (signed envelopes), `projector` (the publication protocol and its
recovery), `status` (the read rule), `http` (clones and pushes through `git http-backend`),
`push` (a push's quarantine and hook), `receive` (what a push means, through the door),
`source` (reading a repository to import), `worktree` (an agent's git working tree:
checkout and submit, through the `git` binary, no pygit2), `agent` (the same through the
HTTP API, for the CLI and the MCP stdio server). Nothing is
imported here, so the client side can use `worktree` without the server's libraries."""
