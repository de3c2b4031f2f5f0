"""The DSL's SX7xx rules as policy ``Rule`` values, so ``safeexec explain SX7xx`` documents them.

Their single home is :mod:`safeexec.dsl.rules`; this module only changes their shape.
"""

from __future__ import annotations

from safeexec.dsl.rules import DSL_RULES as _SOURCE
from safeexec.policy.schema import Rule

__all__ = ["DSL_RULES"]

DSL_RULES: tuple[Rule, ...] = tuple(
    Rule(
        id=r.id,
        name=r.name,
        severity=r.severity,
        enforcement=r.enforcement,
        message="{detail}",
        description=r.description,
        rationale=r.rationale,
        example=r.example,
        source="dsl",
    )
    for r in _SOURCE
)
