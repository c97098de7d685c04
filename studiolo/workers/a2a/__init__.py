"""The A2A requester and what only it uses: the capped, origin-confined transport to remote
agents (`capped`, `origins`), push hints (`hints`) and the reading of a remote task
(`remote_view`). The A2A *face* (serving Studiolo's own tasks) is `faces/a2a/`."""
