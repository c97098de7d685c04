"""The wire package: the models that the server and its clients share.

What runs on an agent's machine (the client, the worker CLI, the remote verifier, the MCP
stdio server) imports these, never `studiolo.service` or `studiolo.store`. This package
imports only the standard library, `studiolo.core` and pydantic (a test holds it to that).
Each module is imported on its own (this one imports none), and each model is built on
first use: a command pays only for what it sends and reads.

    requests.py      request bodies: the server validates them, the client sends them
    responses.py     response bodies: each reads a domain value's attributes
    refusals.py      RefusalDetailOut: what a refused completion's failed predicates found
    verification.py  VerificationItem, TreeEntry, CandidateTree: a verifier's work
"""

__all__: list[str] = []
