"""The engine's own rules (SX9xx): raised by the scanner itself, whatever the policy says."""

from __future__ import annotations

from safeexec.model import Enforcement, Finding, Severity
from safeexec.policy.schema import MatchKind, Rule, RuleMatch

__all__ = [
    "CHECK_CRASHED",
    "ENGINE_RULES",
    "IMPORT_NOT_ALLOWED",
    "UNKNOWN_SYNTAX",
    "engine_finding",
]

CHECK_CRASHED = Rule(
    id="SX900",
    name="check-crashed",
    severity=Severity.CRITICAL,
    enforcement=Enforcement.DENY,
    message="{detail}",
    description=(
        "Denies an action when a check, the scanner or the estimator crashed, or when the scan "
        "ran past its time budget."
    ),
    rationale=(
        "An engine that skips what it could not check fails open: an adversary only has to find "
        "an input that makes one check raise. Every engine failure therefore denies."
    ),
    example="A program built to exhaust the scanner's time budget is denied with SX900.",
    bypasses=(),
    source="engine",
)

UNKNOWN_SYNTAX = Rule(
    id="SX910",
    name="unknown-syntax",
    severity=Severity.CRITICAL,
    enforcement=Enforcement.DENY,
    message="{detail}",
    description=(
        "Denies any syntax node type the engine does not know (default deny over the grammar)."
    ),
    rationale=(
        "Rules are written against a known grammar. New syntax (a newer Python, a parser quirk) "
        "could carry behaviour no rule looks at, so it is refused until the engine learns it."
    ),
    example="Syntax introduced after Python 3.11, such as a `type X = int` alias statement.",
    bypasses=(),
    source="engine",
)

IMPORT_NOT_ALLOWED = Rule(
    id="SX911",
    name="import-not-allowed",
    severity=Severity.HIGH,
    enforcement=Enforcement.DENY,
    message="import of `{module}` is outside the policy's [imports] allowlist",
    description=(
        "Enforces the policy's `[imports]` allow and deny lists when no rule of the policy does "
        "(a policy without an `import` rule still has an import gate)."
    ),
    rationale=(
        "The `[imports]` section is a promise; a policy that declares it but forgets the rule "
        "that enforces it must not fail open."
    ),
    example="With an empty policy, `import os` is denied.",
    bypasses=(),
    match=RuleMatch(kind=MatchKind.IMPORT),
    source="engine",
)

ENGINE_RULES: tuple[Rule, ...] = (CHECK_CRASHED, UNKNOWN_SYNTAX, IMPORT_NOT_ALLOWED)


def engine_finding(rule: Rule, detail: str) -> Finding:
    """A deny finding of engine rule ``rule`` (no span unless the caller adds one)."""
    return Finding(
        rule=rule.id,
        name=rule.name,
        message=detail,
        severity=rule.severity,
        enforcement=Enforcement.DENY,
        evidence=detail[:200],
    )
