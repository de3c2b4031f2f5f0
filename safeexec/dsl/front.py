"""The DSL front end as one call: parse → check → plan → admit. Used by the gate, the backend
and the CLI alike, so all three refuse the same programs for the same reasons."""

from __future__ import annotations

import threading
import types
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from safeexec.dsl import nodes as n
from safeexec.dsl.checker import Checked, check_program
from safeexec.dsl.compiler import compile_code
from safeexec.dsl.limits import DslLimits
from safeexec.dsl.parser import parse_program
from safeexec.dsl.plan import Plan, admit, make_plan
from safeexec.dsl.rules import STRUCTURE, dsl_finding
from safeexec.dsl.signatures import ToolSignature
from safeexec.model.values import Enforcement, Finding

__all__ = ["FrontResult", "check_source", "forget_checks"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class FrontResult:
    """What the front end made of a source text; ``accepted`` when no finding denies it."""

    source: str
    program: n.Program | None
    checked: Checked | None
    plan: Plan | None
    findings: tuple[Finding, ...]
    _entry: _Entry | None = field(default=None, repr=False)

    @property
    def accepted(self) -> bool:
        return self.checked is not None and not any(
            f.enforcement is Enforcement.DENY for f in self.findings
        )

    def code(self) -> types.CodeType:
        """The accepted program compiled (once per cached check: the gate and the backend,
        or a program sent again, share it); its file name is ``<dsl>``."""
        if not self.accepted or self.checked is None:
            raise ValueError("code() needs an accepted program; check the findings first")
        entry = self._entry
        if entry is None:
            return compile_code(self.checked)
        if entry.code is None:
            entry.code = compile_code(entry.checked)
        return entry.code


@dataclass(slots=True, eq=False)
class _Entry:
    """One checked program: what it was checked against, its code once compiled, its plans."""

    signatures: tuple[ToolSignature, ...]
    limits: DslLimits
    checked: Checked
    code: types.CodeType | None = None
    # Its plans by the effects the policy wants approved (a plan is a function of the checked
    # program, the signatures, the limits and those effects; the first three are the entry's).
    plans: dict[frozenset[str], Plan] = field(default_factory=dict)

    def plan(self, approval_effects: frozenset[str]) -> Plan:
        made = self.plans.get(approval_effects)
        if made is None:
            made = make_plan(
                self.checked, self.signatures, self.limits, approval_effects=approval_effects
            )
            self.plans[approval_effects] = made
        return made


# The checks of recent programs, by (source, limits, tool names); an entry is used only when the
# tools' signatures are also equal (parameters, result types, calls left, effects, approval), so
# a changed grant is checked again. Checked values, plans and code objects are immutable.
_CHECKS: OrderedDict[tuple[str, DslLimits, tuple[str, ...]], _Entry] = OrderedDict()
_CHECKS_SIZE = 64
_CHECKS_LOCK = threading.Lock()


def forget_checks() -> None:
    """Empty the check cache (benchmarks measure cold checks with it)."""
    with _CHECKS_LOCK:
        _CHECKS.clear()


def _checked(
    program: n.Program, signatures: tuple[ToolSignature, ...], limits: DslLimits
) -> _Entry:
    key = (program.source, limits, tuple(s.name for s in signatures))
    with _CHECKS_LOCK:
        entry = _CHECKS.get(key)
        if entry is not None and entry.signatures == signatures:
            _CHECKS.move_to_end(key)
            return entry
    checked = check_program(program, signatures, limits=limits)
    entry = _Entry(signatures=signatures, limits=limits, checked=checked)
    with _CHECKS_LOCK:
        _CHECKS[key] = entry
        _CHECKS.move_to_end(key)
        while len(_CHECKS) > _CHECKS_SIZE:
            _CHECKS.popitem(last=False)
    return entry


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
    entry = _checked(parsed, signatures, limits)
    checked = entry.checked
    if not checked.ok:
        return FrontResult(
            source=source, program=parsed, checked=checked, plan=None, findings=checked.findings
        )
    plan = entry.plan(frozenset(approval_effects))
    findings = admit(plan, limits=limits, tool_calls_left=tool_calls_left, describe=describe)
    return FrontResult(
        source=source,
        program=parsed,
        checked=checked,
        plan=plan,
        findings=findings,
        _entry=entry,
    )
