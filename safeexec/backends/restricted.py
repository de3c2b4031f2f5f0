"""The ``restricted`` mode: RestrictedPython with guards, allowlisted imports and capabilities.

By default the restricted runtime runs **inside the confined native worker**
(``NativeBackend(executor="restricted")``): RestrictedPython's history of escapes says it must never
be the only wall, so the OS layers (namespaces, Landlock, seccomp, rlimits, SIGKILL on overrun)
stay underneath it.

``RestrictedBackend(in_process=True)`` (mode ``restricted-inprocess``) runs the code in the host
process instead. **It is not a security boundary.** It is for measuring the guards' overhead
without the worker round trip, and for hosts that cannot fork; no face (the HTTP service, the
MCP server, tool dispatch, the agent adapters, the harness) offers it unless its operator's
configuration names it (:func:`safeexec.backends.registry.refuse_in_process`). Plainly:

* the only wall is the restricted runtime itself (a RestrictedPython or guard bug is a host
  compromise);
* CPU and wall time are bounded by an operation budget compiled into every loop, comprehension
  and call, stopped by a watchdog thread at the deadline; what C-level consumers iterate (long
  ranges, endless ``itertools`` producers) counts too, but a single C operation that runs no
  Python code (``"x" * 10**10``, ``math.factorial(10**8)``, a backtracking regular expression,
  a huge ``sorted``) cannot be interrupted;
* memory is bounded only by watching the host process's virtual size grow during the run (other
  threads' allocations count too, and one huge allocation is not stopped before it happens);
  file sizes and disk use are not bounded; no confinement layer can be required (``require``
  raises ``BackendUnavailable``);
* output is capped as it is written and streamed to ``on_output`` as it is written (capped per
  stream like the worker's, on the thread running the call: a slow callback slows the cell and
  counts against its time); tools work as in the worker, and ``open`` resolves beneath the
  workdir through ``BoundPath``, links never followed, as the host's uid; the runtime here is
  the core and the pure stdlib modules: every module view (``os``, ``pathlib``, ``sys``, threads,
  ``asyncio``, ``sqlite3``, archives, ``logging``, ``warnings``, the data stack) is refused, it
  runs only in the confined worker; ``env`` is ignored;
* sandbox objects live in the host process: they never cross into host code (tool arguments and
  results are JSON-plain copies), but a RestrictedPython or guard bug here is a host compromise.
* CPython 3.11 recurses in C without a depth check through deeply nested objects (hashing a
  million-deep tuple, pulling from a million nested ``map`` iterators): the C stack overflows and
  the host process dies. Code that can build such nesting needs the worker.
"""

from __future__ import annotations

import linecache
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from safeexec._support.tracebacks import exception_message, format_exception
from safeexec.backends.base import BackendSession, OutputSink, SessionSpec
from safeexec.backends.capping import CappedText
from safeexec.backends.exec_result import (
    CallRecord,
    Settled,
    call_tool,
    finish,
    interrupted,
    raised,
    succeeded,
    timed_out,
)
from safeexec.backends.native import NativeBackend
from safeexec.backends.streaming import OutputTap
from safeexec.backends.workdir import (
    ArtifactLimits,
    collect_artifacts,
    download_file,
    remove_tree,
    scan,
    upload_file,
)
from safeexec.capabilities.gateway import ToolReply, tool_function
from safeexec.errors import BackendUnavailable
from safeexec.model.codec import JSONValue
from safeexec.model.values import (
    ExecRequest,
    ExecResult,
    ExecStatus,
    GuardDenied,
    Limits,
    StreamName,
)
from safeexec.restricted import OperationBudget, RestrictedExecutor

if TYPE_CHECKING:
    from safeexec.backends.native.template import TemplateProcess

__all__ = [
    "InProcessRestrictedBackend",
    "InProcessRestrictedSession",
    "RestrictedBackend",
    "in_process_gaps",
]

# What the in-process mode does not protect against (``safeexec doctor`` prints this list).
_IN_PROCESS_GAPS = (
    "the restricted runtime is the only wall: a RestrictedPython or guard bug is a host compromise",
    "single C operations run to the end: 'x' * 10**10, math.factorial(10**8), huge sorted() or "
    "big-integer arithmetic (only re is time-limited, on the regex engine)",
    "memory is watched, not bounded: one huge allocation happens before the watchdog sees it, "
    "and other host threads' allocations count too",
    "file sizes and disk use in the workdir are not bounded; open() and the file views resolve "
    "beneath the workdir without following links, but run as the host's own uid",
    "no confinement layer (namespaces, Landlock, seccomp, rlimits) can be required",
    "deep nesting (hashing a million-deep tuple) overflows the C stack and kills the host process",
    "library code written in Python (difflib, statistics) runs without budget ticks between its "
    "own loop steps",
    "threads the code starts draw from the cell's operation budget and wall limit, not from the "
    "CPU-time watchdog (it reads the cell's own thread); a thread inside a single C operation "
    "when its cell ends finishes it, and runs on into the next cell if it outlasts a second",
    "only the core and the pure stdlib modules run in-process: the module views (os, pathlib, "
    "sys, threading, asyncio, sqlite3, archives, logging, warnings, numpy, pandas, matplotlib) "
    "need the confined worker",
)


def in_process_gaps() -> tuple[str, ...]:
    """What ``restricted-inprocess`` does not protect against, one sentence each."""
    return _IN_PROCESS_GAPS


_WATCHDOG_SECONDS = 0.005
# Artifacts are read into the host process: a smaller total than the worker's.
_ARTIFACT_LIMITS = ArtifactLimits(max_file_bytes=16 * 1024 * 1024, max_total_bytes=16 * 1024 * 1024)
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


class RestrictedBackend:
    """Restricted Python; inside the confined worker unless ``in_process=True`` (weaker).

    ``operations_per_cpu_second`` sizes the in-process operation budget (a backstop behind the
    CPU-time watchdog).
    """

    name: ClassVar[str] = "restricted"

    def __init__(
        self,
        *,
        in_process: bool = False,
        native: NativeBackend | None = None,
        operations_per_cpu_second: int = 100_000_000,
    ) -> None:
        self.in_process = in_process
        self.operations_per_cpu_second = operations_per_cpu_second
        self._native = native
        self._lock = threading.Lock()

    def _native_backend(self) -> NativeBackend:
        with self._lock:
            if self._native is None:
                self._native = NativeBackend(executor="restricted")
            return self._native

    def start(self, process: TemplateProcess | None = None) -> None:
        """Start the worker template now (a no-op in-process); from ``process``, one started
        ahead, if it was started with this backend's options (else it is closed)."""
        if not self.in_process:
            self._native_backend().start(process)
        elif process is not None:
            process.close()

    def close(self) -> None:
        """Stop the worker template (open sessions keep running until closed)."""
        with self._lock:
            native = self._native
        if native is not None:
            native.close()

    def open(self, spec: SessionSpec) -> BackendSession:
        """Open a session; in-process sessions refuse any ``require``d confinement layer."""
        if not self.in_process:
            return self._native_backend().open(spec)
        if spec.require:
            raise BackendUnavailable(
                f"in-process restricted mode provides no confinement layers, but "
                f"require={sorted(spec.require)!r}; use RestrictedBackend() (in the worker) instead"
            )
        return InProcessRestrictedSession(
            spec, operations_per_cpu_second=self.operations_per_cpu_second
        )


class InProcessRestrictedBackend(RestrictedBackend):
    """``restricted-inprocess``: restricted Python in the host process (see
    :func:`in_process_gaps`); a pack must name it in ``[backends] allowed``; never a default."""

    name: ClassVar[str] = "restricted-inprocess"

    def __init__(self, *, operations_per_cpu_second: int = 100_000_000) -> None:
        super().__init__(in_process=True, operations_per_cpu_second=operations_per_cpu_second)


class _Watchdog:
    """Stops the run's budget when the executing thread overruns the call's CPU or wall time, or
    the host process grows by more than the session's ``memory_bytes``."""

    def __init__(self, budget: OperationBudget, limits: Limits, *, memory_bytes: int) -> None:
        self._budget = budget
        self._limits = limits
        self._memory_bytes = memory_bytes
        self._done = threading.Event()
        self._clock = time.pthread_getcpuclockid(threading.get_ident())
        self.cpu_start = time.clock_gettime(self._clock)
        self.wall_start = time.monotonic()
        self._memory_start = _virtual_memory_bytes()
        self._thread = threading.Thread(target=self._watch, name="safeexec-watchdog", daemon=True)

    def cpu_seconds(self) -> float:
        return time.clock_gettime(self._clock) - self.cpu_start

    def __enter__(self) -> _Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._done.wait(_WATCHDOG_SECONDS):
            if time.monotonic() - self.wall_start >= self._limits.wall_seconds:
                self._budget.stop("wall_seconds")
            elif self.cpu_seconds() >= self._limits.cpu_seconds:
                self._budget.stop("cpu_seconds")
            elif _virtual_memory_bytes() - self._memory_start > self._memory_bytes:
                self._budget.stop("memory_bytes")


class InProcessRestrictedSession:
    """A restricted session in the host process (see the module docstring for what it lacks)."""

    def __init__(self, spec: SessionSpec, *, operations_per_cpu_second: int) -> None:
        workdir, tools, limits = spec.workdir, spec.tools, spec.limits
        self._owns_workdir = workdir is None
        self.workdir = Path(tempfile.mkdtemp(prefix="safeexec-")) if workdir is None else workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.blobs = spec.blobs
        self.limits = limits
        self._tools = tools
        self._rate = operations_per_cpu_second
        self._cell = 0
        self._closed = False
        # Re-entrant: a streaming callback runs on the calling thread and may move files.
        self._lock = threading.RLock()
        self._record = CallRecord()
        self._budget: OperationBudget | None = None
        self._executor = RestrictedExecutor(
            imports=tuple(spec.imports),
            workdir=self.workdir,
            count_operations=True,
            output_bytes=limits.output_bytes,
            seed=spec.seed,
        )
        if tools is not None:
            self._executor.bind_tools(
                {d.name: tool_function(d, self._invoke) for d in tools.describe()}
            )

    def _invoke(self, name: str, arguments: JSONValue) -> ToolReply:
        budget = self._budget
        if budget is None or budget.exhausted:
            # No event: the stop itself is recorded, and a stopped run must not grow the log.
            return ToolReply(ok=False, error="the run was stopped; no more tool calls")
        if self._tools is None:  # pragma: no cover - no proxies are bound without a gateway
            return ToolReply(ok=False, error=f"no tool named {name!r} is granted")
        return call_tool(self._tools, name, arguments, self._record)

    def run(self, request: ExecRequest, *, on_output: OutputSink | None = None) -> ExecResult:
        """Run one cell; its output goes to ``on_output`` as it is written (see the module)."""
        with self._lock:
            if self._closed:
                raise BackendUnavailable("this restricted session is closed; open a new one")
            limits = request.limits
            taps = (
                None
                if on_output is None
                else (
                    OutputTap(on_output, StreamName.STDOUT, limits.output_bytes),
                    OutputTap(on_output, StreamName.STDERR, limits.output_bytes),
                )
            )
            try:
                return self._run(request, taps)
            finally:
                for tap in taps or ():
                    tap.close()

    def _run(self, request: ExecRequest, taps: tuple[OutputTap, OutputTap] | None) -> ExecResult:
        limits = request.limits
        self._cell += 1
        filename = f"<cell-{self._cell}>"
        stdout = CappedText(limits.output_bytes, tap=None if taps is None else taps[0].feed)
        stderr = CappedText(limits.output_bytes, tap=None if taps is None else taps[1].feed)
        self._executor.set_sink(stdout)
        record = self._record = CallRecord()
        seconds = min(limits.cpu_seconds, limits.wall_seconds)
        budget = OperationBudget(
            max(1, int(limits.cpu_seconds * self._rate)),
            deadline=time.monotonic() + seconds,
            deadline_reason="cpu_seconds"
            if limits.cpu_seconds <= limits.wall_seconds
            else "wall_seconds",
        )
        self._budget = budget
        before = scan(str(self.workdir), _ARTIFACT_LIMITS)
        error: BaseException | None = None
        formatted = ""
        linecache.cache[filename] = (
            len(request.code),
            None,
            request.code.splitlines(True),
            filename,
        )
        try:
            with _Watchdog(budget, limits, memory_bytes=self.limits.memory_bytes) as watchdog:
                try:
                    shown = self._execute_cell(request.code, filename, budget, stdout)
                    if shown is not None:
                        stdout.write(shown + "\n")
                except Exception as exc:
                    error = exc
            if error is not None and not budget.exhausted:
                formatted = format_exception(error)
                stderr.write(formatted)
        finally:
            linecache.cache.pop(filename, None)
            self._budget = None
        record.events.extend(
            GuardDenied(guard=guard, detail=detail) for guard, detail in self._executor.last_denials
        )
        settled = self._settle(budget, error, limits, formatted)
        artifacts = collect_artifacts(
            str(self.workdir), before, blobs=self.blobs, limits=_ARTIFACT_LIMITS
        )
        return finish(
            settled,
            record=record,
            stdout=stdout.capture,
            stderr=stderr.capture,
            limits=limits,
            blobs=self.blobs,
            artifacts=artifacts,
            cpu_seconds=watchdog.cpu_seconds(),
            wall_seconds=time.monotonic() - watchdog.wall_start,
        )

    def _execute_cell(
        self, code: str, filename: str, budget: OperationBudget, stdout: CappedText
    ) -> str | None:
        """Run one cell's code; what it shows (its final expression's repr) or ``None``.

        The hook the DSL session overrides to compile its own language."""
        return self._executor.execute(code, filename=filename, budget=budget)

    def _settle(
        self, budget: OperationBudget, error: BaseException | None, limits: Limits, formatted: str
    ) -> Settled:
        record = self._record
        reason = budget.reason()
        if reason == "interrupted":
            return interrupted("host", limits=limits, record=record)
        if reason == "wall_seconds":
            return timed_out("wall_seconds", limits=limits, record=record)
        if reason in ("cpu_seconds", "operations"):
            detail = "" if reason == "cpu_seconds" else " (operation budget)"
            return timed_out("cpu_seconds", limits=limits, record=record, detail=detail)
        memory_bytes = self.limits.memory_bytes  # a session limit, like the worker's rlimit
        if reason == "memory_bytes":
            record.limit_hit("memory_bytes", float(memory_bytes))
            return Settled(
                status=ExecStatus.LIMIT_EXCEEDED,
                exit_code=None,
                message=f"memory limit: the process grew by more than {memory_bytes} bytes",
            )
        if error is None:
            return succeeded()
        return raised(
            type(error).__name__,
            exception_message(error),
            limits=self.limits,
            record=record,
            traceback=formatted,
        )

    def interrupt(self) -> None:
        """Stop the running cell at its next counted operation (state kept); no-op when idle."""
        budget = self._budget
        if budget is not None:
            budget.stop("interrupted")

    def upload(self, name: str, data: bytes) -> None:
        """Write ``data`` to ``name`` (relative) in the workdir; never follows symlinks."""
        with self._lock:
            upload_file(str(self.workdir), name, data)

    def download(self, name: str) -> bytes:
        """The bytes of regular file ``name`` in the workdir (capped by ``file_size_bytes``)."""
        return download_file(str(self.workdir), name, self.limits.file_size_bytes)

    def reset(self) -> None:
        self._executor.reset()
        if self._tools is not None:
            self._executor.bind_tools(
                {d.name: tool_function(d, self._invoke) for d in self._tools.describe()}
            )

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._executor.reset()
            if self._owns_workdir:
                remove_tree(str(self.workdir))


def _virtual_memory_bytes() -> int:
    """The host process's virtual size (what a run's growth is measured against)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[0]) * _PAGE_SIZE
    except (OSError, ValueError, IndexError):
        return 0
