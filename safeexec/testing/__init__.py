"""Policy tests: run a pack's ``*.cases.py`` and ``*.test.toml`` files (also a pytest plugin)."""

from __future__ import annotations

from safeexec.testing.runner import CaseFailure, PackReport, run_pack_tests

__all__ = ["CaseFailure", "PackReport", "run_pack_tests"]
