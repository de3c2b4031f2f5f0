"""Static resource bounds of a parsed action (being built out)."""

from __future__ import annotations

from safeexec.model import Bound, Estimate
from safeexec.parse import Parsed

__all__ = ["estimate"]


def estimate(parsed: Parsed) -> Estimate:
    """Return static CPU, memory, output and tool-call bounds; never executes the code."""
    del parsed
    unknown = Bound.unknown("estimator not complete yet")
    return Estimate(cpu=unknown, memory=unknown, output=unknown, tool_calls=unknown)
