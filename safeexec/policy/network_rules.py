"""The egress proxy's SX65x rules as policy ``Rule`` values, so ``safeexec explain SX650``
documents them.

Their single home is :mod:`safeexec.egress.catalogue`; this module only changes their shape.
"""

from __future__ import annotations

from safeexec.egress.catalogue import NETWORK_RULES as _SOURCE
from safeexec.model.values import Enforcement, Severity
from safeexec.policy.schema import Rule

__all__ = ["NETWORK_RULES"]

NETWORK_RULES: tuple[Rule, ...] = tuple(
    Rule(
        id=r.id,
        name=r.name,
        severity=Severity.MEDIUM,
        enforcement=Enforcement.DENY,
        message="{detail}",
        description=r.description,
        rationale=r.rationale,
        example=r.example,
        remedy=f"the policy key that governs it: [{r.key.partition('.')[0]}] "
        f"{r.key.partition('.')[2] or '(the table)'}",
        source="network",
    )
    for r in _SOURCE
)
