"""The wire package: value types that the server and its clients share.

What runs on an agent's machine (the client, the worker CLI, the remote verifier, the MCP
stdio server) imports these, never `studiolo.service` or `studiolo.store`. This package
imports only the standard library, `studiolo.core` and pydantic (a test holds it to that).

    verification.py  VerificationItem, TreeEntry, CandidateTree: a verifier's work
"""

from studiolo.api.verification import CandidateTree, TreeEntry, VerificationItem

__all__ = ["CandidateTree", "TreeEntry", "VerificationItem"]
