"""The single-pass scanner (being built out)."""

from __future__ import annotations

from safeexec.model import Enforcement, Estimate, Finding, Severity
from safeexec.parse import Parsed
from safeexec.policy.schema import Policy

__all__ = ["scan"]


def scan(parsed: Parsed, policy: Policy, *, estimate: Estimate | None = None) -> tuple[Finding, ...]:
    """Return every finding the policy's rules raise about ``parsed``; never raises."""
    del parsed, policy, estimate
    return (
        Finding(
            rule="SX900",
            name="check-crashed",
            message="the scanner is not complete yet; denying (fail closed)",
            severity=Severity.CRITICAL,
            enforcement=Enforcement.DENY,
        ),
    )
