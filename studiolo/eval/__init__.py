"""`studiolo eval`: the report's §8 evaluation on a real repository's history
(docs/evaluation.md). Unlike `studiolo.study`, it runs the real door, the real verifier and
the repository's own test suite."""
