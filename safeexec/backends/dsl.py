"""The ``dsl`` mode: programs in the safeexec DSL, checked, planned, compiled to a Python
``ast.Module`` (shapes verified) and run with no builtins, metered capability proxies and the
in-process restricted session's watchdog and operation budget.

The session runs in the host process on the in-process restricted machinery (operation budget,
CPU/wall watchdog, capped output), which is sound here for a reason restricted Python lacks: the
DSL is total and its compiled code calls only checked helpers on JSON values — every loop is
over a bounded list, every string or list it builds is size-checked, integers are bit-capped,
and there is no attribute access, import or name outside the checker's scope. No confinement
layer can be required (``require`` raises ``BackendUnavailable``).

The backend checks each program again against the tools it was given — with their specs and
remaining calls when the gateway is a ``CapabilitySet`` (so an over-limit program is refused here
too, before any call), else from the descriptors (results untyped) — and enforces that plan's
bounds at run time: calls per tool, total iterations, items per tool result.
"""

from __future__ import annotations

import types
from typing import ClassVar

from safeexec.backends.base import BackendSession, SessionSpec
from safeexec.backends.capping import CappedText
from safeexec.backends.restricted import InProcessRestrictedSession
from safeexec.capabilities.gateway import CapabilitySet, ToolDescriptor, tool_function
from safeexec.dsl.front import check_source
from safeexec.dsl.limits import DslLimits
from safeexec.dsl.plan import Plan
from safeexec.dsl.runtime import DslRuntime, DslRuntimeError, render_value
from safeexec.dsl.signatures import ToolSignature, signature_of_descriptor, signatures_of
from safeexec.errors import BackendUnavailable
from safeexec.model.values import Enforcement
from safeexec.restricted import OperationBudget, SandboxExit

__all__ = ["DslBackend", "DslRejected", "DslSession"]


class DslRejected(DslRuntimeError):
    """The backend's own check refused the program (the gate should have already)."""


class DslBackend:
    """Runs DSL programs under each session's ``SessionSpec.dsl`` caps (the policy's ``[dsl]``),
    narrowed by ``limits`` when given (a backend can only tighten a policy)."""

    name: ClassVar[str] = "dsl"

    def __init__(
        self, *, limits: DslLimits | None = None, operations_per_cpu_second: int = 100_000_000
    ) -> None:
        self.limits = limits
        self.operations_per_cpu_second = operations_per_cpu_second

    def open(self, spec: SessionSpec) -> BackendSession:
        """Open a session; refuses any ``require``d confinement layer (it runs in-process)."""
        if spec.require:
            raise BackendUnavailable(
                f"the dsl mode runs in-process and provides no confinement layers, but "
                f"require={sorted(spec.require)!r}; drop [backends] require or use another mode"
            )
        limits = spec.dsl if self.limits is None else spec.dsl.narrowed(self.limits)
        return DslSession(
            spec, limits=limits, operations_per_cpu_second=self.operations_per_cpu_second
        )

    def close(self) -> None:
        """Nothing to release (sessions hold everything)."""


class DslSession(InProcessRestrictedSession):
    """One DSL session; each run is one whole program (no bindings carry between runs)."""

    def __init__(
        self, spec: SessionSpec, *, limits: DslLimits, operations_per_cpu_second: int
    ) -> None:
        super().__init__(spec, operations_per_cpu_second=operations_per_cpu_second)
        self.dsl_limits = limits
        self.last_plan: Plan | None = None
        self.last_runtime: DslRuntime | None = None  # what the last run counted (calls, iterations)

    def _execute_cell(
        self, code: str, filename: str, budget: OperationBudget, stdout: CappedText
    ) -> str | None:
        descriptors = self._tools.describe() if self._tools is not None else ()
        self.last_plan = self.last_runtime = None
        front = check_source(
            code, self._signatures(descriptors), limits=self.dsl_limits, describe=False
        )
        if not front.accepted or front.checked is None or front.plan is None:
            denied = [f for f in front.findings if f.enforcement is Enforcement.DENY]
            raise DslRejected("; ".join(f"{f.rule} {f.message}" for f in denied[:5]))
        compiled = _named(front.code(), filename)
        self.last_plan = front.plan
        self.last_runtime = runtime = DslRuntime(
            max_iterations=front.plan.iterations,
            call_bounds={t.name: t.max_calls for t in front.plan.tools},
            max_items=self.dsl_limits.max_items,
            max_text_chars=self.dsl_limits.max_text_chars,
            sink=stdout,
            operations=budget.counter,
        )
        tools = {d.name: tool_function(d, self._invoke) for d in descriptors}
        # No builtins and no RestrictedPython pass: the compiler's shapes were verified, and the
        # code names only the run's helpers and tools (dsl/SPEC.md, "Where a DSL program runs").
        namespace: dict[str, object] = {"__builtins__": {}, "__name__": "__dsl__"}
        namespace.update(runtime.namespace(tools))
        try:
            exec(compiled, namespace)
        except Exception:
            raise
        except BaseException as exc:  # KeyboardInterrupt and the like end the cell, as restricted
            raise SandboxExit(f"{type(exc).__name__}{exc.args!r} ended the cell") from None
        return render_value(runtime.result) if runtime.returned else None

    def reset(self) -> None:
        """Nothing carries between runs: each program runs in a namespace of its own."""

    def _signatures(self, descriptors: tuple[ToolDescriptor, ...]) -> tuple[ToolSignature, ...]:
        # A CapabilitySet knows the specs and the calls left: the same plan the gate made, with
        # the same refusals. Any other gateway only describes parameters (results untyped).
        if isinstance(self._tools, CapabilitySet):
            return signatures_of(self._tools)
        return tuple(signature_of_descriptor(d) for d in descriptors)


def _named(code: types.CodeType, filename: str) -> types.CodeType:
    """``code`` (shared by the runs of one checked program) as if compiled from ``filename``,
    lambdas too, so tracebacks point into this run's cell."""
    consts = tuple(
        _named(c, filename) if isinstance(c, types.CodeType) else c for c in code.co_consts
    )
    return code.replace(co_filename=filename, co_consts=consts)
