"""The static gate as one pure call: parse → estimate → scan → decide, without running anything.

This is what ``safeexec check`` and the policy-test runner call; it never raises for any input
(a crash anywhere becomes an SX900 deny finding).

Agents and benchmarks resubmit identical code, so the work before ``decide`` (parse, estimate,
scan) is cached in-process, keyed by everything it reads: the code's sha256, the policy (its
digest *and* the object itself: a policy built or replaced in code carries whatever digest it
was given), the mode and the grantable tool names. ``decide`` runs on every call, so the budget
and the backend asked for are never cached. A result holding an SX900 (a crash, a scan past its
time budget) is never stored.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from safeexec._support.collector import gc_paused
from safeexec._support.memo import BoundedCache, CacheStatistics
from safeexec.analysis import scan
from safeexec.analysis.estimate import estimate
from safeexec.decide import decide
from safeexec.model.fieldwise import Fieldwise
from safeexec.model.values import (
    Action,
    Budget,
    Decision,
    Enforcement,
    Estimate,
    Finding,
    Severity,
    sha256_hex,
)
from safeexec.parse import Parsed, ParseFailure, parse
from safeexec.policy.engine_rules import CHECK_CRASHED, engine_finding
from safeexec.policy.loader import policy_digest
from safeexec.policy.modes import DSL_MODES, mode_imports
from safeexec.policy.schema import MatchKind, Policy
from safeexec.restricted.allowlist import restricted_modules

if TYPE_CHECKING:  # imported on first use: the DSL (lark, its checker) and the tool layer
    from safeexec.capabilities.gateway import CapabilitySet, ToolSpec
    from safeexec.dsl.front import FrontResult
    from safeexec.dsl.signatures import ToolSignature

__all__ = [
    "GateResult",
    "PolicySuggestion",
    "check",
    "check_action",
    "check_cache_statistics",
    "clear_check_cache",
    "dsl_tool_signatures",
    "fresh_budget",
    "suggest_policy",
]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class GateResult:
    """The decision on one action and what it was made from (``parsed`` None: it did not parse)."""

    action: Action
    parsed: Parsed | None
    estimate: Estimate | None
    decision: Decision
    dsl: FrontResult | None = None

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.decision.findings

    @property
    def checked_code(self) -> str | None:
        """The exact text that was checked and may run (``None``: nothing parsed)."""
        if self.parsed is not None:
            return self.parsed.code
        return self.dsl.source if self.dsl is not None and self.dsl.program is not None else None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class _Checked:
    """What parse, estimate and scan made of one code text under one policy, mode and tools."""

    policy: Policy  # held, so the id in the key cannot be reused while the entry lives
    parsed: Parsed | None
    estimate: Estimate | None
    findings: tuple[Finding, ...]


_CheckKey = tuple[str, str, int, str, frozenset[str]]
# Sized by source length: a parsed tree takes some 40x its source in memory.
_CHECKED: BoundedCache[_CheckKey, _Checked] = BoundedCache(max_entries=256, max_size=2_000_000)


def check_cache_statistics() -> CacheStatistics:
    """Hits, misses and size of the in-process cache behind :func:`check`."""
    return _CHECKED.statistics()


def clear_check_cache() -> None:
    """Empty the cache behind :func:`check` (benchmarks time a cold check; tests that replace
    the gate's steps start from it)."""
    _CHECKED.clear()


def fresh_budget(policy: Policy) -> Budget:
    """The budget a new session under ``policy`` starts with."""
    return Budget(
        steps_left=policy.budget.steps,
        cpu_seconds_left=policy.budget.cpu_seconds,
        tool_calls_left=policy.budget.tool_calls,
    )


def check(
    action: Action | str,
    policy: Policy,
    *,
    budget: Budget | None = None,
    backend: str | None = None,
    tool_names: Collection[str] | None = None,
    tools: Sequence[ToolSignature] | None = None,
    capabilities: CapabilitySet | None = None,
) -> GateResult:
    """Decide on ``action`` (or code text) under ``policy`` without running it.

    ``budget`` defaults to a fresh session's, ``backend`` to the policy's default and
    ``tool_names`` to the tools the policy lets a session be granted. In a DSL mode the
    text is a DSL program whatever its fence says, checked against ``tools`` (default: the
    policy's grantable tools, untyped; or, given ``capabilities``, its grants with their specs
    and calls left) and planned; the plan rides on the decision's findings.

    The front door (``safeexec.check``): code text becomes an :class:`Action` here, and
    :func:`check_action` decides. The pipeline's own callers hold an ``Action`` already and
    call :func:`check_action`.
    """
    return check_action(
        Action.create(action) if isinstance(action, str) else action,
        policy,
        budget=budget,
        backend=backend,
        tool_names=tool_names,
        tools=tools,
        capabilities=capabilities,
    )


def check_action(
    action: Action,
    policy: Policy,
    *,
    budget: Budget | None = None,
    backend: str | None = None,
    tool_names: Collection[str] | None = None,
    tools: Sequence[ToolSignature] | None = None,
    capabilities: CapabilitySet | None = None,
) -> GateResult:
    """Decide on ``action`` under ``policy`` without running it; see :func:`check`."""
    chosen = policy.backends.default if backend is None else backend
    if chosen in DSL_MODES:
        if tools is None and capabilities is not None:
            from safeexec.dsl.signatures import signatures_of

            tools = signatures_of(capabilities)
        return _check_dsl(action, policy, budget=budget, backend=backend, tools=tools)
    if tool_names is None:
        tool_names = tuple(c.tool for c in policy.capabilities if c.grantable)
    key = (sha256_hex(action.code), policy.digest, id(policy), chosen, frozenset(tool_names))
    checked = _CHECKED.get(key)
    if checked is None or checked.policy is not policy:
        checked = _static_check(action, policy, chosen, key[4])
        if not any(f.rule == CHECK_CRASHED.id for f in checked.findings):
            _CHECKED.put(key, checked, size=len(action.code))
    parsed = checked.parsed
    if parsed is not None and parsed.action is not action:
        parsed = replace(parsed, action=action)
    decision = decide(
        findings=checked.findings,
        estimate=checked.estimate,
        policy=policy,
        budget=budget if budget is not None else fresh_budget(policy),
        backend=backend,
    )
    return GateResult(action=action, parsed=parsed, estimate=checked.estimate, decision=decision)


def _static_check(
    action: Action, policy: Policy, mode: str, tool_names: frozenset[str]
) -> _Checked:
    parsed: Parsed | None = None
    estimated: Estimate | None = None
    findings: tuple[Finding, ...]
    try:
        with gc_paused():  # parsing and scanning build acyclic trees; see gc_paused
            outcome = parse(action)
            if isinstance(outcome, ParseFailure):
                findings = (outcome.finding,)
            else:
                parsed = outcome
                estimated = estimate(parsed, tool_names=tool_names)
                findings = scan(parsed, policy, estimate=estimated, mode=mode)
    except Exception as exc:
        findings = (engine_finding(CHECK_CRASHED, f"the check crashed ({type(exc).__name__})"),)
    return _Checked(policy=policy, parsed=parsed, estimate=estimated, findings=findings)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class PolicySuggestion(Fieldwise):
    """The smallest pack extension that lets code past the import rules, and what still refuses it.

    ``toml`` is a pack file extending the policy (empty when no import needs allowing);
    ``remaining`` are the deny findings no import extension removes (each says how to proceed).
    """

    modules: tuple[str, ...]
    native_only: bool
    toml: str
    remaining: tuple[Finding, ...]


def suggest_policy(
    action: Action | str, policy: Policy, *, backend: str | None = None
) -> PolicySuggestion:
    """For policy authors: which modules a pack extending ``policy`` must allow so that
    ``action`` passes the import rules in ``backend`` (default: the policy's), found by checking
    again with each refused module allowed until nothing new is refused."""
    if isinstance(action, str):
        action = Action.create(action)
    mode = policy.backends.default if backend is None else backend
    # Modules a critical rule refuses are never suggested: allowing one overrides that rule,
    # a decision for a reviewer (`policy lint` flags it), not for a suggestion.
    import_rules = {
        r.id: r.severity is Severity.CRITICAL
        for r in policy.rules
        if r.match is not None and r.match.kind is MatchKind.IMPORT
    }
    added: list[str] = []
    candidate = policy
    for _ in range(16):  # each round adds at least one module; code imports few
        findings = check_action(action, candidate, backend=mode).findings
        refused = [
            f for f in findings if f.rule in import_rules and f.enforcement is Enforcement.DENY
        ]
        critical = {f.evidence for f in refused if import_rules[f.rule]}
        wanted = [
            f.evidence
            for f in refused
            if f.evidence
            and f.evidence not in critical
            and not f.evidence.startswith(".")
            and f.evidence not in added
            and (mode != "restricted" or restricted_modules((f.evidence,)))
        ]
        if not wanted:
            break
        added.extend(dict.fromkeys(wanted))
        candidate = _with_imports(policy, tuple(added), native_only=mode == "native")
    remaining = tuple(f for f in findings if f.enforcement is Enforcement.DENY)
    native_only = mode == "native" and any(
        m not in mode_imports(policy.imports, "restricted") for m in added
    )
    key = "extend_native_allow" if native_only else "extend_allow"
    toml = (
        f'extends = "{policy.info.id}"\n\n[policy]\nid = "{policy.info.id}-extended"\n\n'
        f"[imports]\n{key} = {json.dumps(added)}\n"
        if added
        else ""
    )
    return PolicySuggestion(
        modules=tuple(added), native_only=native_only, toml=toml, remaining=remaining
    )


def _with_imports(policy: Policy, modules: tuple[str, ...], *, native_only: bool) -> Policy:
    imports = policy.imports
    if native_only:
        imports = replace(imports, native_allow=(*imports.native_allow, *modules))
    else:
        imports = replace(imports, allow=(*imports.allow, *modules))
    widened = replace(policy, imports=imports, digest="")
    return replace(widened, digest=policy_digest(widened))


def dsl_tool_signatures(
    policy: Policy, specs: Sequence[ToolSpec] = ()
) -> tuple[ToolSignature, ...]:
    """What the DSL checker knows without a session: ``specs`` (typed), each with the policy's
    ``max_calls`` and ``requires_approval`` where it lists the tool; without specs, the policy's
    grantable tools by name only (untyped, effects unknown: a plan calling one needs approval
    whenever the policy's ``[approval] effects`` name any)."""
    from safeexec.dsl.signatures import ToolSignature, signature_of_spec

    configs = {c.tool: c for c in policy.capabilities if c.grantable}
    if not specs:
        return tuple(
            ToolSignature(
                name=c.tool,
                max_calls=c.max_calls,
                requires_approval=c.requires_approval,
                effects_known=False,
            )
            for c in configs.values()
        )
    return tuple(
        signature_of_spec(
            spec,
            max_calls=configs[spec.name].max_calls,
            requires_approval=configs[spec.name].requires_approval,
        )
        if spec.name in configs
        else signature_of_spec(spec)
        for spec in specs
    )


def _check_dsl(
    action: Action,
    policy: Policy,
    *,
    budget: Budget | None,
    backend: str | None,
    tools: Sequence[ToolSignature] | None,
) -> GateResult:
    from safeexec.dsl.front import check_source

    budget = budget if budget is not None else fresh_budget(policy)
    if tools is None:
        tools = dsl_tool_signatures(policy)
    try:
        front: FrontResult | None = check_source(
            action.code,
            tools,
            limits=policy.dsl,
            tool_calls_left=budget.tool_calls_left,
            approval_effects=policy.approval.effects,
        )
        assert front is not None
        findings = front.findings
    except Exception as exc:
        front = None
        findings = (engine_finding(CHECK_CRASHED, f"the DSL check crashed ({type(exc).__name__})"),)
    decision = decide(
        findings=findings, estimate=None, policy=policy, budget=budget, backend=backend
    )
    return GateResult(action=action, parsed=None, estimate=None, decision=decision, dsl=front)
