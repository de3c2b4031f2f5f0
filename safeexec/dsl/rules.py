"""The DSL's rule ids (SX7xx): one home for their ids, names, severities and documentation.

``safeexec.policy.dsl_rules`` turns these into policy ``Rule`` values so ``safeexec explain
SX7xx`` documents them like every other rule; the DSL front end makes findings from them here.
"""

from __future__ import annotations

from dataclasses import dataclass

from safeexec.model.values import Enforcement, Finding, Severity, Span

__all__ = ["DSL_RULES", "DslRule", "dsl_finding"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DslRule:
    """One SX7xx rule and its documentation (what it does / why / example)."""

    id: str
    name: str
    severity: Severity
    enforcement: Enforcement
    description: str
    rationale: str
    example: str


def _rule(
    id: str, name: str, description: str, rationale: str, example: str, *,
    severity: Severity = Severity.HIGH, enforcement: Enforcement = Enforcement.DENY,
) -> DslRule:  # fmt: skip
    return DslRule(
        id=id,
        name=name,
        severity=severity,
        enforcement=enforcement,
        description=description,
        rationale=rationale,
        example=example,
    )


SYNTAX = _rule(
    "SX700",
    "dsl-syntax-error",
    "Refuses text that is not a DSL program, pointing at the first construct the grammar lacks.",
    "The grammar is the whole language: whatever it cannot parse (imports, def, while, methods, "
    "dunder names) has no meaning in the DSL and is never guessed at.",
    "`import os` is refused at line 1, column 1: the DSL has no imports.",
)
UNKNOWN_NAME = _rule(
    "SX701",
    "dsl-unknown-name",
    "Refuses a name that is not a binding, a granted tool, an op or a known record field.",
    "Names resolve statically, so a program reaches nothing but its values and granted tools; "
    "a misspelling is caught before any tool runs (with a did-you-mean).",
    "`reserv(sku=s)` when `reserve` is granted: unknown tool `reserv`; did you mean `reserve`?",
)
TYPE_ERROR = _rule(
    "SX702",
    "dsl-type-error",
    "Refuses a program whose values do not fit: tool arguments against the tool's JSON schema, "
    "operators against their operands, ops against their signatures.",
    "A call the tool would refuse at run time is refused before the pipeline starts, so a "
    "pipeline never stops half-way on a typo in an argument.",
    "`search(query=3)` when `query` is a string parameter.",
)
ITERATIONS = _rule(
    "SX703",
    "dsl-iterations-over-limit",
    "Refuses a program whose static upper bound on loop and op iterations exceeds the limit.",
    "Every loop in the DSL runs over a collection of statically known maximum size, so its cost "
    "is known before it runs; a program that could run too long is refused up front.",
    "`for i in range(100000):` nested in another such loop (10^10 iterations).",
)
CALLS = _rule(
    "SX704",
    "dsl-calls-over-limit",
    "Refuses a program that could call a tool more times than its grant's `max_calls`.",
    "A pipeline stopped half-way by a call limit may have spent money or written data already; "
    "the static plan bounds the calls, so an over-limit program never starts.",
    "`for p in items: reserve(sku=p.sku)` over up to 1000 items when `reserve` allows 3 calls.",
)
BUDGET = _rule(
    "SX705",
    "dsl-budget-exceeded",
    "Refuses a program whose planned total of tool calls exceeds the session's tool-call budget.",
    "The session budget is a promise to the operator; a plan that could break it is refused "
    "before it starts rather than at the call that crosses it.",
    "A plan of up to 60 calls when 50 are left in the session's budget.",
)
TOTAL_CALLS = _rule(
    "SX707",
    "dsl-plan-over-call-limit",
    "Refuses a program whose planned total of tool calls exceeds the policy's "
    "`[dsl] max_tool_calls`.",
    "A policy can bound how much one DSL action may do across all its tools, whatever each "
    "grant allows; the bound is checked on the plan, before any call.",
    "`[dsl] max_tool_calls = 10` and a loop calling `get_quote` over up to 50 holdings.",
)
STRUCTURE = _rule(
    "SX706",
    "dsl-misplaced-statement",
    "Refuses a `return` that is not the program's last top-level statement, a rebinding of a "
    "tool, op or loop variable, and a lambda used as a value.",
    "The program's answer is one value at its end; names of tools and ops cannot be shadowed; "
    "functions are never values, so nothing can call itself.",
    "`f = lambda x: x` — lambdas are arguments of ops only.",
)
NEEDS_APPROVAL = _rule(
    "SX710",
    "dsl-plan-needs-approval",
    "Asks for approval of the plan when it may call a tool with an effect the policy's "
    "`[approval] effects` names, or whose grant requires approval; the plan (tools, bounds, "
    "effects, which of them need approval, constant arguments) is the finding's evidence.",
    "A human approves what the program will do, with bounds, before a single tool runs; the "
    "plan is stored with the audit event.",
    '`[approval] effects = ["money"]` and a plan that may call `reserve` (effect money) once.',
    severity=Severity.MEDIUM,
    enforcement=Enforcement.APPROVE,
)
PLAN = _rule(
    "SX790",
    "dsl-plan",
    "Records the static plan of an accepted program (tools, call bounds, iterations, effects).",
    "The audit log keeps what the program was allowed to do next to what it did.",
    "Every DSL action carries one SX790 audit finding whose evidence is the plan as JSON.",
    severity=Severity.INFO,
    enforcement=Enforcement.AUDIT,
)

DSL_RULES: tuple[DslRule, ...] = (
    SYNTAX,
    UNKNOWN_NAME,
    TYPE_ERROR,
    ITERATIONS,
    CALLS,
    BUDGET,
    STRUCTURE,
    TOTAL_CALLS,
    NEEDS_APPROVAL,
    PLAN,
)


def dsl_finding(rule: DslRule, message: str, *, span: Span | None, evidence: str = "") -> Finding:
    """A finding of ``rule`` at ``span``."""
    return Finding(
        rule=rule.id,
        name=rule.name,
        message=message,
        severity=rule.severity,
        enforcement=rule.enforcement,
        span=span,
        evidence=evidence,
    )
