"""The ``dsl`` mode: programs in the safeexec DSL, checked, planned and compiled in the host, run
in the confined worker.

The host parses, type-checks, costs, plans and compiles each program to a code object (shapes
verified, ``safeexec.dsl.compiler``); the worker (``NativeBackend(executor="dsl")``, the template
and confinement every mode shares) runs it with no builtins under the session's rlimits and
cgroup, charging every value it makes against the ``[dsl]`` caps
(``safeexec.sandbox.dsl_runtime``). Tools reach the program only as the worker's proxies: each
call crosses the worker channel to the session's ``ToolGateway``, as in every worker mode.

The backend checks each program again against the tools it was given — with their specs and
remaining calls when the gateway is a ``CapabilitySet`` (so an over-limit program is refused here
too, before any call), else from the descriptors (results untyped) — and the runtime enforces
that plan's bounds: calls per tool, total iterations, items per tool result. The calls per tool
are enforced again in the host, at the gateway the worker's calls reach (the worker's count is
the untrusted side's).

``dsl-inprocess`` (:class:`InProcessDslBackend`) runs the same compiled code in the host process
instead; it is opt-in and **not a security boundary**.
"""

from __future__ import annotations

import dataclasses
import marshal
import threading
from typing import TYPE_CHECKING, ClassVar

from safeexec.backends.base import BackendSession, OutputSink, SessionSpec, ToolGateway
from safeexec.backends.capping import CappedText
from safeexec.backends.exec_result import CallRecord, finish, raised
from safeexec.backends.native import NativeBackend, NativeSession
from safeexec.backends.restricted import InProcessRestrictedSession
from safeexec.capabilities.gateway import (
    CapabilitySet,
    ToolDescriptor,
    ToolReply,
    tool_function,
)
from safeexec.dsl.front import FrontResult, check_source
from safeexec.dsl.limits import DslLimits
from safeexec.dsl.plan import Plan
from safeexec.dsl.signatures import ToolSignature, signature_of_descriptor, signatures_of
from safeexec.errors import BackendUnavailable, ConfigurationError
from safeexec.model.codec import JSONValue
from safeexec.model.values import Enforcement, ExecRequest, ExecResult, ExecStatus, ToolRefused
from safeexec.restricted import OperationBudget, SandboxExit
from safeexec.sandbox.dsl_executor import DslBounds, DslCell, new_runtime, run_program
from safeexec.sandbox.dsl_runtime import DslLimitError, DslRuntime, DslRuntimeError

if TYPE_CHECKING:
    from safeexec.backends.native.template import TemplateProcess

__all__ = [
    "DslBackend",
    "DslRejected",
    "DslSession",
    "InProcessDslBackend",
    "InProcessDslSession",
]


class DslRejected(DslRuntimeError):
    """The backend's own check refused the program (the gate should have already)."""


def _signatures(tools: ToolGateway | None) -> tuple[ToolSignature, ...]:
    # A CapabilitySet knows the specs and the calls left: the same plan the gate made, with
    # the same refusals. Any other gateway only describes parameters (results untyped).
    if tools is None:
        return ()
    if isinstance(tools, CapabilitySet):
        return signatures_of(tools)
    return tuple(signature_of_descriptor(d) for d in tools.describe())


def _accepted(code: str, tools: ToolGateway | None, limits: DslLimits) -> FrontResult:
    """The program checked and planned again here; ``DslRejected`` if it is refused."""
    front = check_source(code, _signatures(tools), limits=limits, describe=False)
    if not front.accepted or front.checked is None or front.plan is None:
        denied = [f for f in front.findings if f.enforcement is Enforcement.DENY]
        raise DslRejected("; ".join(f"{f.rule} {f.message}" for f in denied[:5]))
    return front


def _bounds(plan: Plan, limits: DslLimits) -> DslBounds:
    return DslBounds(
        iterations=plan.iterations,
        calls={t.name: t.max_calls for t in plan.tools},
        max_items=limits.max_items,
        max_text_chars=limits.max_text_chars,
    )


_AT_CAP = DslLimitError.__name__


def _at_cap(result: ExecResult) -> ExecResult:
    """``result`` with a program stopped at a cap (``DslLimitError``: a value past
    ``max_text_chars``/``max_items``, an integer past its bits, a bound of the plan) as a limit
    status rather than an error."""
    error = result.error
    if result.status is ExecStatus.ERROR and error is not None and error.name == _AT_CAP:
        return dataclasses.replace(result, status=ExecStatus.LIMIT_EXCEEDED)
    return result


class _PlannedGateway:
    """The session's gateway with the running program's plan enforced in the host: a tool
    called more often than the plan bounds it is refused here, whatever the worker counted (the
    worker's own count is the untrusted side's)."""

    def __init__(self, inner: ToolGateway) -> None:
        self._inner = inner
        self._left: dict[str, int] = {}
        self._lock = threading.Lock()

    def begin(self, plan: Plan) -> None:
        """Allow the calls ``plan`` bounds, for the run about to start."""
        with self._lock:
            self._left = {t.name: t.max_calls for t in plan.tools}

    def describe(self) -> tuple[ToolDescriptor, ...]:
        return self._inner.describe()

    def invoke(self, name: str, arguments: JSONValue) -> ToolReply:
        with self._lock:
            left = self._left.get(name, 0)
            if left > 0:
                self._left[name] = left - 1
        if left <= 0:
            event = ToolRefused(tool=name, capability_id="", reason="past the program's plan")
            error = f"`{name}` was called more often than the program's plan allows"
            return ToolReply(ok=False, error=error, event=event)
        return self._inner.invoke(name, arguments)


def _narrowed(spec: SessionSpec, limits: DslLimits | None) -> DslLimits:
    return spec.dsl if limits is None else spec.dsl.narrowed(limits)


class DslBackend:
    """Runs DSL programs in the confined worker under each session's ``SessionSpec.dsl`` caps
    (the policy's ``[dsl]``), narrowed by ``limits`` when given (a backend can only tighten a
    policy). ``native``: the worker backend to use (default ``NativeBackend(executor="dsl")``)."""

    name: ClassVar[str] = "dsl"

    def __init__(
        self, *, limits: DslLimits | None = None, native: NativeBackend | None = None
    ) -> None:
        if native is not None and native.executor != "dsl":
            raise ConfigurationError(
                f"native.executor={native.executor!r} cannot run DSL programs; "
                "pass NativeBackend(executor='dsl')"
            )
        self.limits = limits
        self._native = native
        self._lock = threading.Lock()

    def _native_backend(self) -> NativeBackend:
        with self._lock:
            if self._native is None:
                self._native = NativeBackend(executor="dsl")
            return self._native

    def start(self, process: TemplateProcess | None = None) -> None:
        """Start the worker template now; from ``process``, one started ahead, if it was
        started with this backend's options (else it is closed)."""
        self._native_backend().start(process)

    def open(self, spec: SessionSpec) -> BackendSession:
        """Open a session: a confined worker (``require``d layers are checked as in ``native``)."""
        gateway = None if spec.tools is None else _PlannedGateway(spec.tools)
        worker = self._native_backend().open(dataclasses.replace(spec, tools=gateway))
        return DslSession(worker, spec, gateway, limits=_narrowed(spec, self.limits))

    def close(self) -> None:
        """Stop the worker template (open sessions keep running until closed)."""
        with self._lock:
            native = self._native
        if native is not None:
            native.close()


class DslSession:
    """One DSL session in a confined worker; each run is one whole program (no bindings carry
    between runs). The host checks and compiles; the worker runs the code object."""

    def __init__(
        self,
        worker: NativeSession,
        spec: SessionSpec,
        gateway: _PlannedGateway | None,
        *,
        limits: DslLimits,
    ) -> None:
        self._worker = worker
        self._spec = spec
        self._gateway = gateway
        self.dsl_limits = limits
        self.last_plan: Plan | None = None

    def run(self, request: ExecRequest, *, on_output: OutputSink | None = None) -> ExecResult:
        """Check and compile ``request.code`` here, run it in the worker (a refused program
        never reaches the worker: an error result naming the findings)."""
        self.last_plan = None
        try:
            front = _accepted(request.code, self._spec.tools, self.dsl_limits)
        except DslRejected as exc:
            return self._refused(request, str(exc))
        assert front.plan is not None  # _accepted checked it
        self.last_plan = front.plan
        cell = DslCell(
            source=request.code,
            module=marshal.dumps(front.code()),
            bounds=_bounds(front.plan, self.dsl_limits),
        )
        sent = dataclasses.replace(request, code=cell.to_text())
        if self._gateway is not None:
            self._gateway.begin(front.plan)
        return _at_cap(self._worker.run(sent, on_output=on_output))

    def _refused(self, request: ExecRequest, message: str) -> ExecResult:
        record = CallRecord()
        limits = request.limits
        empty = CappedText(limits.output_bytes).capture
        settled = raised(DslRejected.__name__, message, limits=limits, record=record)
        return finish(
            settled,
            record=record,
            stdout=empty,
            stderr=empty,
            limits=limits,
            blobs=self._spec.blobs,
            artifacts=(),
            cpu_seconds=0.0,
            wall_seconds=0.0,
        )

    @property
    def pid(self) -> int | None:
        """The host pid of the worker process the programs run in (``None`` when none runs)."""
        return self._worker.pid

    def reset(self) -> None:
        """Nothing carries between runs; the worker is kept."""

    def interrupt(self) -> None:
        self._worker.interrupt()

    def upload(self, name: str, data: bytes) -> None:
        self._worker.upload(name, data)

    def download(self, name: str) -> bytes:
        return self._worker.download(name)

    def close(self) -> None:
        self._worker.close()


class InProcessDslBackend:
    """``dsl-inprocess``: the compiled program runs in the **host** process. This is **not a
    security boundary**: only the DSL's own checks (no builtins, checked helpers, caps charged
    before values are made, an operation budget and a watchdog) stand between the program and
    the host; nothing bounds a single C operation or the host's memory from outside. It is for
    measuring the worker's round trip and for hosts that cannot fork; a pack must name it in
    ``[backends] allowed``; never a default."""

    name: ClassVar[str] = "dsl-inprocess"

    def __init__(
        self, *, limits: DslLimits | None = None, operations_per_cpu_second: int = 100_000_000
    ) -> None:
        self.limits = limits
        self.operations_per_cpu_second = operations_per_cpu_second

    def open(self, spec: SessionSpec) -> BackendSession:
        """Open a session; refuses any ``require``d confinement layer (it runs in-process)."""
        if spec.require:
            raise BackendUnavailable(
                f"dsl-inprocess runs in the host process and provides no confinement layers, "
                f"but require={sorted(spec.require)!r}; use the dsl mode (in the worker)"
            )
        return InProcessDslSession(
            spec,
            limits=_narrowed(spec, self.limits),
            operations_per_cpu_second=self.operations_per_cpu_second,
        )

    def close(self) -> None:
        """Nothing to release (sessions hold everything)."""


class InProcessDslSession(InProcessRestrictedSession):
    """One ``dsl-inprocess`` session (not a security boundary); each run is one whole program."""

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
        self.last_plan = self.last_runtime = None
        front = _accepted(code, self._tools, self.dsl_limits)
        assert front.plan is not None  # _accepted checked it
        self.last_plan = front.plan
        descriptors = self._tools.describe() if self._tools is not None else ()
        tools = {d.name: tool_function(d, self._invoke) for d in descriptors}
        self.last_runtime = runtime = new_runtime(
            _bounds(front.plan, self.dsl_limits), sink=stdout, operations=budget.counter
        )
        try:
            run_program(front.code(), filename=filename, runtime=runtime, tools=tools)
        except Exception:
            raise
        except BaseException as exc:  # KeyboardInterrupt and the like end the cell, as restricted
            raise SandboxExit(f"{type(exc).__name__}{exc.args!r} ended the cell") from None
        return runtime.shown_result()

    def run(self, request: ExecRequest, *, on_output: OutputSink | None = None) -> ExecResult:
        """Run one program (see :class:`InProcessRestrictedSession`)."""
        return _at_cap(super().run(request, on_output=on_output))

    def reset(self) -> None:
        """Nothing carries between runs: each program runs in a namespace of its own."""
