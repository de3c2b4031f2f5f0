"""A policy's rules compiled once into lookup tables the scanner consults per node."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from fnmatch import translate

from safeexec.policy.engine_rules import IMPORT_NOT_ALLOWED
from safeexec.policy.modes import mode_imports, module_matches
from safeexec.policy.schema import MatchKind, Policy, Rule

__all__ = ["CompiledRules", "NameTable", "compile_rules", "module_matches"]


@dataclass(slots=True)
class NameTable:
    """Exact names in a dict, wildcard patterns in one list; ``lookup`` returns matching rules.

    A pattern is kept as its regular expression's source and compiled only when a looked-up name
    matches the patterns joined (most names match none, and a run compiles the joined one only).
    """

    exact: dict[str, list[Rule]] = field(default_factory=dict)
    patterns: list[tuple[str, Rule]] = field(default_factory=list)
    _any_pattern: re.Pattern[str] | None = None
    _memo: dict[str, list[Rule]] = field(default_factory=dict)

    def add(self, names: Iterable[str], rule: Rule) -> None:
        for name in names:
            if "*" in name or "?" in name:
                self.patterns.append((translate(name), rule))
            else:
                self.exact.setdefault(name, []).append(rule)
        self._any_pattern = None  # joined again at the next lookup, not once per rule added
        self._memo.clear()

    def lookup(self, name: str) -> list[Rule]:
        """The rules whose names or patterns match ``name`` (memoised; the memo stays small)."""
        found = self._memo.get(name)
        if found is not None:
            return found
        found = self.exact.get(name, [])
        if self.patterns and self._any_pattern is None:
            self._any_pattern = re.compile("|".join(f"(?:{p})" for p, _ in self.patterns))
        if self._any_pattern is not None and self._any_pattern.match(name):
            found = found + [rule for pattern, rule in self.patterns if re.match(pattern, name)]
        if len(self._memo) > 4096:
            self._memo.clear()
        self._memo[name] = found
        return found

    def __bool__(self) -> bool:
        return bool(self.exact or self.patterns)


@dataclass(slots=True)
class CompiledRules:
    """``policy``'s rules in force in ``mode``, with that mode's import allowlist."""

    policy: Policy
    mode: str = "native"
    allow: tuple[str, ...] = ()
    imports: list[Rule] = field(default_factory=list)
    calls: NameTable = field(default_factory=NameTable)
    attributes: NameTable = field(default_factory=NameTable)
    names: NameTable = field(default_factory=NameTable)
    nodes: dict[str, list[Rule]] = field(default_factory=dict)
    estimates: list[Rule] = field(default_factory=list)
    checks: dict[str, list[Rule]] = field(default_factory=dict)


def compile_rules(policy: Policy, mode: str | None = None) -> CompiledRules:
    """Compile ``policy``'s rules for ``mode`` (default: the policy's default backend); cached
    per digest and mode, re-checked against the policy itself."""
    chosen = policy.backends.default if mode is None else mode
    key = (policy.digest, chosen)
    cached = _by_digest.get(key) if policy.digest else None
    # A hand-made Policy may carry a stale digest (dataclasses.replace): compare to be sure.
    if cached is not None and (cached.policy is policy or cached.policy == policy):
        return cached
    compiled = _compile(policy, chosen)
    if policy.digest:
        if len(_by_digest) >= 32:
            _by_digest.clear()
        _by_digest[key] = compiled
    return compiled


_by_digest: dict[tuple[str, str], CompiledRules] = {}


def _compile(policy: Policy, mode: str) -> CompiledRules:
    compiled = CompiledRules(policy=policy, mode=mode, allow=mode_imports(policy.imports, mode))
    for rule in policy.rules:
        if not rule.applies_in(mode):
            continue
        if rule.check is not None:
            compiled.checks.setdefault(rule.check, []).append(rule)
            continue
        match = rule.match
        if match is None:
            continue
        if match.kind is MatchKind.IMPORT:
            compiled.imports.append(rule)
        elif match.kind is MatchKind.CALL:
            compiled.calls.add((_builtin_name(n) for n in match.names), rule)
        elif match.kind is MatchKind.ATTRIBUTE:
            compiled.attributes.add(match.names, rule)
        elif match.kind is MatchKind.NAME:
            compiled.names.add(match.names, rule)
        elif match.kind is MatchKind.NODE:
            for name in match.names:
                compiled.nodes.setdefault(name, []).append(rule)
        elif match.kind is MatchKind.ESTIMATE:
            compiled.estimates.append(rule)
    if not any(
        r.match is not None and not (r.match.allow or r.match.deny) for r in compiled.imports
    ):
        compiled.imports.append(IMPORT_NOT_ALLOWED)
    return compiled


def _builtin_name(name: str) -> str:
    return name.removeprefix("builtins.")
