"""The DSL front end as one call: parse → check → plan → admit. Used by the gate, the backend
and the CLI alike, so all three refuse the same programs for the same reasons."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from safeexec.dsl import nodes as n
from safeexec.dsl.checker import Checked, check_program
from safeexec.dsl.limits import DslLimits
from safeexec.dsl.parser import parse_program
from safeexec.dsl.plan import Plan, admit, make_plan
from safeexec.dsl.rules import STRUCTURE, dsl_finding
from safeexec.dsl.signatures import ToolSignature
from safeexec.model import Enforcement, Finding

__all__ = ["FrontResult", "check_source"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class FrontResult:
    """What the front end made of a source text; ``accepted`` when no finding denies it."""

    source: str
    program: n.Program | None
    checked: Checked | None
    plan: Plan | None
    findings: tuple[Finding, ...]

    @property
    def accepted(self) -> bool:
        return self.checked is not None and not any(
            f.enforcement is Enforcement.DENY for f in self.findings
        )


def check_source(
    source: str,
    tools: Iterable[ToolSignature],
    *,
    limits: DslLimits | None = None,
    tool_calls_left: int | None = None,
    approval_effects: Iterable[str] = (),
    describe: bool = True,
) -> FrontResult:
    """Parse, check and plan ``source`` under ``limits``; never raises for any text.

    ``approval_effects`` are the effects (``money``, ``write``...) the policy wants approved: a
    plan whose tools have one asks for approval (``SX710``) with the plan attached. Without
    ``describe`` the approval and plan-record findings are left out (a backend's re-check)."""
    limits = limits or DslLimits()
    signatures = tuple(tools)
    parsed = parse_program(source)
    if isinstance(parsed, Finding):
        return FrontResult(source=source, program=None, checked=None, plan=None, findings=(parsed,))
    if not parsed.body:
        empty = dsl_finding(
            STRUCTURE, "the program is empty; end it with `return <value>`", span=None
        )
        return FrontResult(
            source=source, program=parsed, checked=None, plan=None, findings=(empty,)
        )
    checked = check_program(parsed, signatures, limits=limits)
    if not checked.ok:
        return FrontResult(
            source=source, program=parsed, checked=checked, plan=None, findings=checked.findings
        )
    plan = make_plan(checked, signatures, limits, approval_effects=approval_effects)
    findings = admit(plan, limits=limits, tool_calls_left=tool_calls_left, describe=describe)
    return FrontResult(source=source, program=parsed, checked=checked, plan=plan, findings=findings)
