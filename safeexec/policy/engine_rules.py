"""The engine's own rules: every finding the pipeline raises itself, whatever the policy says.

This catalogue is the only way to build an engine finding (:func:`engine_finding` takes one of
these :class:`Rule` values), so every id the engine can emit is documented here, ``safeexec
explain`` finds it and ``safeexec policy docs`` lists it. Ranges: SX0xx parse, SX5xx budget and
backend choice, SX9xx the engine failing closed. A pack may not declare these ids.
"""

from __future__ import annotations

from types import MappingProxyType

from safeexec.model.values import Enforcement, Finding, Severity, Span
from safeexec.policy.schema import MatchKind, Rule, RuleMatch

__all__ = [
    "BACKEND_CRASHED",
    "BACKEND_NOT_ALLOWED",
    "BACKEND_UNAVAILABLE",
    "BUDGET_EXHAUSTED",
    "CHECK_CRASHED",
    "ENGINE_RULES",
    "ENGINE_RULES_BY_ID",
    "IMPORT_NOT_ALLOWED",
    "INPUT_TOO_LARGE",
    "INVALID_ENCODING",
    "NESTING_TOO_DEEP",
    "NO_CODE",
    "PARSER_MISMATCH",
    "SYNTAX_ERROR",
    "UNKNOWN_SYNTAX",
    "engine_finding",
]

_DETAIL = "{detail}"  # the engine writes each message itself; the template only passes it through

# ---------------------------------------------------------------------------------------------
# SX0xx: the action could not be parsed (or held no code)

SYNTAX_ERROR = Rule(
    id="SX001",
    name="syntax-error",
    severity=Severity.HIGH,
    enforcement=Enforcement.DENY,
    message=_DETAIL,
    description=(
        "Denies code CPython rejects, in its parser or its compiler (`return` outside a "
        "function, null bytes). The message is CPython's own; the evidence is the offending line "
        "with a caret under the column. When CPython rejects the code the finding is SX001 even "
        "if libcst would accept it: the model needs the interpreter's diagnosis to fix its code."
    ),
    rationale=(
        "Code that does not compile cannot run; saying exactly where it fails is what lets the "
        "model repair it in the next step."
    ),
    example="def f(:\n    pass",
    source="engine",
)

INPUT_TOO_LARGE = Rule(
    id="SX002",
    name="input-too-large",
    severity=Severity.HIGH,
    enforcement=Enforcement.DENY,
    message=_DETAIL,
    description=(
        "Denies source longer than the parser's byte limit, or whose parse work would be too "
        "large: libcst's time follows the summed depth of the tree's nodes plus a few units per "
        "line, and that work is capped before libcst sees the code (a 600-line action costs "
        "about 30,000 units; a megabyte of blank lines or hundreds of nested lists, millions)."
    ),
    rationale=(
        "The checker must finish on every input. An action of megabytes of blank lines or "
        "hundreds of nested lists would stall it, and a checker that gives up fails open."
    ),
    example="x = [[[[1]]]]  # repeated a few hundred times",
    source="engine",
)

PARSER_MISMATCH = Rule(
    id="SX003",
    name="parser-mismatch",
    severity=Severity.HIGH,
    enforcement=Enforcement.DENY,
    message=_DETAIL,
    description=(
        "Denies code CPython accepts but libcst rejects, sees with a different statement "
        "structure (kind and block depth of every statement), does not reprint exactly, or whose "
        "identifier normalisation cannot be proven faithful."
    ),
    rationale=(
        "The rules read one parser's tree and CPython runs another's. Where they disagree the "
        "checker cannot see what would run, which is an escape route, so it denies."
    ),
    example="# code on which the two parsers disagree, e.g. a tokenizer corner case",
    source="engine",
)

NESTING_TOO_DEEP = Rule(
    id="SX004",
    name="nesting-too-deep",
    severity=Severity.HIGH,
    enforcement=Enforcement.DENY,
    message=_DETAIL,
    description=(
        "Denies a syntax tree deeper than the parser's nesting limit, measured on CPython's tree "
        "before libcst sees the code and counting the chains libcst nests where CPython's tree "
        "is flat (`a and b and ...`, adjacent string literals); also when a parser or the "
        "checker runs out of stack. CPython's own tokenizer stops at 200 nested brackets and "
        "100 indentation levels."
    ),
    rationale=(
        "libcst crashes the process on about 1,500 nested parentheses and slows quadratically "
        "on deep nesting; refusing early keeps the checker alive and bounded."
    ),
    example="x = " + "(" * 300 + "1" + ")" * 300,
    source="engine",
)

INVALID_ENCODING = Rule(
    id="SX005",
    name="invalid-encoding",
    severity=Severity.HIGH,
    enforcement=Enforcement.DENY,
    message=_DETAIL,
    description=(
        "Denies source with lone surrogates or undecodable bytes, or a PEP 263 coding cookie "
        "other than utf-8."
    ),
    rationale=(
        "A coding cookie makes CPython decode the bytes differently from the text that was "
        "checked; the bytes that were checked must be the bytes that run."
    ),
    example="# -*- coding: utf-7 -*-",
    source="engine",
)

NO_CODE = Rule(
    id="SX006",
    name="no-code",
    severity=Severity.LOW,
    enforcement=Enforcement.DENY,
    message=_DETAIL,
    description="Reports a model reply in which no code to run was found.",
    rationale=(
        "Nothing runs, and the model is told where to put its code (a fenced python block) "
        "instead of being met with silence."
    ),
    example="I would compute the sum with a loop.",
    source="engine",
)

# ---------------------------------------------------------------------------------------------
# SX5xx: the session's budget and the policy's backends

BUDGET_EXHAUSTED = Rule(
    id="SX510",
    name="budget-exhausted",
    severity=Severity.HIGH,
    enforcement=Enforcement.DENY,
    message=_DETAIL,
    description=(
        "Denies an action when the session has no steps, CPU seconds or tool calls left, or "
        "when the estimate proves the code makes more tool calls than remain. The evidence "
        "names the exhausted dimension."
    ),
    rationale=(
        "The policy's `[budget]` bounds a whole session, not one action; an agent that loops "
        "forever must run out."
    ),
    example="The 51st step of a session under a policy with `[budget] steps = 50`.",
    source="engine",
)

BACKEND_NOT_ALLOWED = Rule(
    id="SX520",
    name="backend-not-allowed",
    severity=Severity.HIGH,
    enforcement=Enforcement.DENY,
    message=_DETAIL,
    description=(
        "Denies running an action in an execution mode the policy's `[backends] allowed` list "
        "does not name."
    ),
    rationale=(
        "The confinement a backend gives is part of the policy; a caller must not pick a weaker "
        "one than the policy admits."
    ),
    example='`backend="restricted"` under a policy whose `[backends] allowed` is `["native"]`.',
    source="engine",
)

# ---------------------------------------------------------------------------------------------
# SX9xx: the engine failing closed

CHECK_CRASHED = Rule(
    id="SX900",
    name="check-crashed",
    severity=Severity.CRITICAL,
    enforcement=Enforcement.DENY,
    message=_DETAIL,
    description=(
        "Denies an action when a check, the scanner, the estimator or another pipeline step "
        "crashed, or when the scan ran past its time budget."
    ),
    rationale=(
        "An engine that skips what it could not check fails open: an adversary only has to find "
        "an input that makes one check raise. Every engine failure therefore denies."
    ),
    example="A program built to exhaust the scanner's time budget is denied with SX900.",
    source="engine",
)

BACKEND_UNAVAILABLE = Rule(
    id="SX901",
    name="backend-unavailable",
    severity=Severity.CRITICAL,
    enforcement=Enforcement.DENY,
    message=_DETAIL,
    description=(
        "Records that an allowed action was not run because its backend could not be started "
        "or lacks a confinement layer the policy requires."
    ),
    rationale=(
        "Running the code somewhere weaker than the policy asked for would fail open; the "
        "action is denied and the audit log says why."
    ),
    example="A policy that requires `seccomp` on a host without seccomp support.",
    source="engine",
)

BACKEND_CRASHED = Rule(
    id="SX902",
    name="backend-crashed",
    severity=Severity.CRITICAL,
    enforcement=Enforcement.DENY,
    message=_DETAIL,
    description=(
        "Records that the backend failed while running an allowed action (an infrastructure "
        "failure, not the user code's own error or timeout)."
    ),
    rationale=(
        "Whatever the backend did before it failed is unknown, so the step is reported as "
        "denied rather than as a result."
    ),
    example="The sandbox worker's channel closes in the middle of a call.",
    source="engine",
)

UNKNOWN_SYNTAX = Rule(
    id="SX910",
    name="unknown-syntax",
    severity=Severity.CRITICAL,
    enforcement=Enforcement.DENY,
    message=_DETAIL,
    description=(
        "Denies any syntax node type the engine does not know (default deny over the grammar)."
    ),
    rationale=(
        "Rules are written against a known grammar. New syntax (a newer Python, a parser quirk) "
        "could carry behaviour no rule looks at, so it is refused until the engine learns it."
    ),
    example="Syntax introduced after Python 3.11, such as a `type X = int` alias statement.",
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
    match=RuleMatch(kind=MatchKind.IMPORT),
    source="engine",
)

ENGINE_RULES: tuple[Rule, ...] = (
    SYNTAX_ERROR,
    INPUT_TOO_LARGE,
    PARSER_MISMATCH,
    NESTING_TOO_DEEP,
    INVALID_ENCODING,
    NO_CODE,
    BUDGET_EXHAUSTED,
    BACKEND_NOT_ALLOWED,
    CHECK_CRASHED,
    BACKEND_UNAVAILABLE,
    BACKEND_CRASHED,
    UNKNOWN_SYNTAX,
    IMPORT_NOT_ALLOWED,
)

ENGINE_RULES_BY_ID: MappingProxyType[str, Rule] = MappingProxyType(
    {rule.id: rule for rule in ENGINE_RULES}
)


def engine_finding(
    rule: Rule, message: str, *, span: Span | None = None, evidence: str | None = None
) -> Finding:
    """A finding of engine rule ``rule`` with ``message``; ``evidence`` defaults to the message.

    Raises ``ValueError`` for a rule that is not in :data:`ENGINE_RULES`, so no engine id can be
    emitted without its documentation.
    """
    if ENGINE_RULES_BY_ID.get(rule.id) is not rule:
        raise ValueError(f"rule={rule.id!r} is not an engine rule; add it to ENGINE_RULES")
    return Finding(
        rule=rule.id,
        name=rule.name,
        message=message,
        severity=rule.severity,
        enforcement=rule.enforcement,
        span=span,
        evidence=message[:200] if evidence is None else evidence,
    )
