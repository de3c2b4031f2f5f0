"""Lint a loaded policy for what the schema allows but a reviewer would flag."""

from __future__ import annotations

from dataclasses import dataclass

from safeexec.model.values import Enforcement, Severity
from safeexec.policy.modes import explicitly_allowed, module_matches
from safeexec.policy.schema import MatchKind, Policy, Rule, RuleStatus

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
        issues.extend(_overrides(policy, rule, where))
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


def _overrides(policy: Policy, rule: Rule, where: str) -> list[LintIssue]:
    """A pack's explicit allowlist entry that overrides a critical import rule's own deny list.

    That is the documented extension point (``extend_allow = ["subprocess"]`` in a pack that
    extends ``default``), and it widens what the rule was written to refuse, so say so.
    """
    match = rule.match
    if (
        match is None
        or match.kind is not MatchKind.IMPORT
        or not match.deny
        or match.allow
        or rule.severity is not Severity.CRITICAL
    ):
        return []
    issues = []
    for key, entries in (
        ("allow", policy.imports.allow),
        ("native_allow", policy.imports.native_allow),
    ):
        for entry in entries:
            stem = entry.removesuffix(".*")
            if entry != "*" and (
                module_matches(stem, match.deny)
                or any(explicitly_allowed(d.removesuffix(".*"), (entry,)) for d in match.deny)
            ):
                issues.append(
                    LintIssue(
                        where=where,
                        message=f"[imports] {key} entry {entry!r} overrides the deny list of "
                        f"critical rule {rule.id} ({rule.name}): code may now import what it "
                        "was written to refuse; keep it only if the sandbox contains it",
                    )
                )
    return issues
