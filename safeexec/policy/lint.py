"""Lint a loaded policy for what the schema allows but a reviewer would flag."""

from __future__ import annotations

from dataclasses import dataclass

from safeexec.model import Enforcement
from safeexec.policy.schema import MatchKind, Policy, RuleStatus

__all__ = ["LintIssue", "lint_policy"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LintIssue:
    """One problem: where (a rule's source, or the pack) and what to change."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def lint_policy(policy: Policy) -> list[LintIssue]:
    """Documentation gaps, shadowed rules, contradictory lists; empty when the pack is clean."""
    issues: list[LintIssue] = []
    where_pack = policy.sources[-1] if policy.sources else policy.info.id
    names: dict[str, str] = {}
    for rule in policy.rules:
        where = rule.source or where_pack
        for field_name in ("description", "rationale", "example"):
            if not getattr(rule, field_name).strip():
                issues.append(
                    LintIssue(
                        where=where,
                        message=f"rule {rule.id} has no {field_name}; `safeexec explain` and the "
                        "rule docs print it",
                    )
                )
        if rule.name in names and names[rule.name] != rule.id:
            issues.append(
                LintIssue(
                    where=where,
                    message=f"rule {rule.id} reuses the name {rule.name!r} of {names[rule.name]}",
                )
            )
        names.setdefault(rule.name, rule.id)
        if rule.status is RuleStatus.PREVIEW and rule.enforcement is Enforcement.DENY:
            issues.append(
                LintIssue(
                    where=where,
                    message=f"preview rule {rule.id} says deny but only warns until it is stable",
                )
            )
        if rule.match is not None and rule.match.kind is MatchKind.IMPORT:
            both = set(rule.match.allow) & set(rule.match.deny)
            if both:
                issues.append(
                    LintIssue(
                        where=where,
                        message=f"rule {rule.id} both allows and denies {sorted(both)}",
                    )
                )
    overlap = set(policy.imports.allow) & set(policy.imports.deny)
    if overlap:
        issues.append(
            LintIssue(
                where=where_pack,
                message=f"[imports] allows and denies {sorted(overlap)}; deny wins, drop one",
            )
        )
    if not policy.rules:
        issues.append(
            LintIssue(where=where_pack, message="the policy has no rules beyond the engine's gates")
        )
    return issues
