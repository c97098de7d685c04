"""The pure domain: values, paths, canonical hashing, the completion predicate.

Standard library only (plus the pure `rfc8785` canonicalizer); no I/O, clock or SQL.
"""
