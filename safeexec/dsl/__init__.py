"""The ``dsl`` mode's language: a small, total language for tool pipelines (see dsl/SPEC.md)."""
