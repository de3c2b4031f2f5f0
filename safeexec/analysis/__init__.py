"""Static analysis: run every policy rule over a parsed action in one traversal.

``scan(parsed, policy)`` returns the findings; it never raises on any input (a crashed check or a
scan past its time budget becomes an ``SX900`` deny finding: fail closed).
"""

from __future__ import annotations

from safeexec.analysis.scanner import scan

__all__ = ["scan"]
