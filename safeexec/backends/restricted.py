"""The ``restricted`` mode: RestrictedPython with guards, allowlisted imports and capabilities.

By default the restricted runtime runs **inside the confined native worker**
(``NativeBackend(executor="restricted")``): RestrictedPython's history of escapes says it must never
be the only wall, so the OS layers (namespaces, Landlock, seccomp, rlimits, SIGKILL on overrun)
stay underneath it.

``RestrictedBackend(in_process=True)`` runs the code in the host process instead, for hosts that
cannot fork and for the ablation. It is **weaker**, plainly:

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
* output is capped as it is written; tools and files work as in the worker (``open`` is confined
  beneath the workdir by path checks only); ``env`` is ignored (the code has no ``os.environ``);
* sandbox objects live in the host process: they never cross into host code (tool arguments and
  results are JSON-plain copies), but a RestrictedPython or guard bug here is a host compromise.
* CPython 3.11 recurses in C without a depth check through deeply nested objects (hashing a
  million-deep tuple, pulling from a million nested ``map`` iterators): the C stack overflows and
  the host process dies. Code that can build such nesting needs the worker.
"""

from __future__ import annotations

import io
import linecache
import os
import tempfile
import threading
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from safeexec.backends.base import BackendSession, ToolGateway
from safeexec.backends.native import MAX_REFUSAL_EVENTS, NativeBackend
from safeexec.backends.workdir import (
    ArtifactLimits,
    collect_artifacts,
    download_file,
    remove_tree,
    scan,
    upload_file,
)
from safeexec.blobs import BlobStore
from safeexec.capabilities import ToolReply, tool_function
from safeexec.codec import JSONValue
from safeexec.errors import BackendUnavailable
from safeexec.model import (
    ExecRequest,
    ExecResult,
    ExecStatus,
    ExecutionEvent,
    GuardDenied,
    LimitHit,
    Limits,
    ToolRefused,
    Usage,
)
from safeexec.sandbox.restricted import OperationBudget, RestrictedExecutor

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
    "file sizes and disk use in the workdir are not bounded; open() is confined by path checks "
    "only, as the host's own uid",
    "no confinement layer (namespaces, Landlock, seccomp, rlimits) can be required",
    "deep nesting (hashing a million-deep tuple) overflows the C stack and kills the host process",
    "library code written in Python (difflib, statistics) runs without budget ticks between its "
    "own loop steps",
)


def in_process_gaps() -> tuple[str, ...]:
    """What ``restricted-inprocess`` does not protect against, one sentence each."""
    return _IN_PROCESS_GAPS


_WATCHDOG_SECONDS = 0.005
_MESSAGE_CHARS = 2000
_MAX_CHAINED_ERRORS = 16
_MAX_GROUPED_ERRORS = 256
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

    def start(self) -> None:
        """Start the worker template now (a no-op in-process)."""
        if not self.in_process:
            self._native_backend().start()

    def close(self) -> None:
        """Stop the worker template (open sessions keep running until closed)."""
        with self._lock:
            native = self._native
        if native is not None:
            native.close()

    def open(
        self,
        *,
        workdir: Path | None = None,
        limits: Limits,
        blobs: BlobStore,
        tools: ToolGateway | None = None,
        require: frozenset[str] = frozenset(),
        imports: tuple[str, ...] = (),
        env: Mapping[str, str] | None = None,
    ) -> BackendSession:
        """Open a session; in-process sessions refuse any ``require``d confinement layer."""
        if not self.in_process:
            return self._native_backend().open(
                workdir=workdir,
                limits=limits,
                blobs=blobs,
                tools=tools,
                require=require,
                imports=imports,
                env=env,
            )
        if require:
            raise BackendUnavailable(
                f"in-process restricted mode provides no confinement layers, but "
                f"require={sorted(require)!r}; use RestrictedBackend() (in the worker) instead"
            )
        return InProcessRestrictedSession(
            workdir=workdir,
            blobs=blobs,
            tools=tools,
            imports=tuple(imports),
            operations_per_cpu_second=self.operations_per_cpu_second,
            limits=limits,
        )


class InProcessRestrictedBackend(RestrictedBackend):
    """``restricted-inprocess``: restricted Python in the host process (see
    :func:`in_process_gaps`); a pack must name it in ``[backends] allowed``; never a default."""

    name: ClassVar[str] = "restricted-inprocess"

    def __init__(self, *, operations_per_cpu_second: int = 100_000_000) -> None:
        super().__init__(in_process=True, operations_per_cpu_second=operations_per_cpu_second)


class _CappedText(io.TextIOBase):
    """A text sink keeping the first and last ``cap // 2`` UTF-8 bytes and counting the rest
    (the same shape as the worker's capped pipes)."""

    def __init__(self, cap: int) -> None:
        self.cap = max(0, cap)
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    @property
    def truncated(self) -> bool:
        return self.total > self.cap

    def write(self, text: str) -> int:
        data = str(text).encode("utf-8", "backslashreplace")
        self.total += len(data)
        head_room = self.cap - self.cap // 2 - len(self._head)
        if head_room > 0:
            self._head += data[:head_room]
            data = data[head_room:]
        if data:
            self._tail += data
            keep = self.cap // 2
            if len(self._tail) > 2 * keep + 65536:
                del self._tail[: len(self._tail) - keep]
        return len(text)

    def value(self) -> bytes:
        if not self.truncated:
            return bytes(self._head + self._tail)
        keep = self.cap // 2
        tail = bytes(self._tail[len(self._tail) - keep :]) if keep else b""
        omitted = self.total - len(self._head) - len(tail)
        return bytes(self._head) + f"\n[... {omitted} bytes omitted ...]\n".encode() + tail


class _Watchdog:
    """Stops the run's budget when the executing thread overruns its CPU or wall time."""

    def __init__(self, budget: OperationBudget, limits: Limits) -> None:
        self._budget = budget
        self._limits = limits
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
            elif _virtual_memory_bytes() - self._memory_start > self._limits.memory_bytes:
                self._budget.stop("memory_bytes")


class InProcessRestrictedSession:
    """A restricted session in the host process (see the module docstring for what it lacks)."""

    def __init__(
        self,
        *,
        workdir: Path | None,
        blobs: BlobStore,
        tools: ToolGateway | None,
        imports: tuple[str, ...],
        operations_per_cpu_second: int,
        limits: Limits,
    ) -> None:
        self._owns_workdir = workdir is None
        self.workdir = Path(tempfile.mkdtemp(prefix="safeexec-")) if workdir is None else workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.blobs = blobs
        self.limits = limits
        self._tools = tools
        self._rate = operations_per_cpu_second
        self._cell = 0
        self._closed = False
        self._lock = threading.Lock()
        self._events: list[ExecutionEvent] = []
        self._tool_calls = 0
        self._refusals = 0
        self._budget: OperationBudget | None = None
        self._executor = RestrictedExecutor(
            imports=imports,
            workdir=self.workdir,
            count_operations=True,
            output_bytes=limits.output_bytes,
        )
        if tools is not None:
            self._executor.bind_tools(
                {d.name: tool_function(d, self._invoke) for d in tools.describe()}
            )

    def _invoke(self, name: str, arguments: JSONValue) -> ToolReply:
        budget = self._budget
        if budget is None or budget.exhausted:
            reply = ToolReply(
                ok=False,
                error="the run was stopped; no more tool calls",
                event=ToolRefused(tool=name, capability_id="", reason="run stopped"),
            )
        elif self._tools is None:  # pragma: no cover - no proxies are bound without a gateway
            reply = ToolReply(ok=False, error=f"no tool named {name!r} is granted")
        else:
            self._tool_calls += 1
            try:
                reply = self._tools.invoke(name, arguments)
            except Exception as exc:  # a gateway must not raise; fail closed for the code
                reply = ToolReply(ok=False, error=f"tool {name!r} failed: {type(exc).__name__}")
        if isinstance(reply.event, ToolRefused):
            self._refusals += 1  # past the first MAX_REFUSAL_EVENTS only counted, as in the worker
            if self._refusals > MAX_REFUSAL_EVENTS:
                return reply
        if reply.event is not None:
            self._events.append(reply.event)
        return reply

    def run(self, request: ExecRequest) -> ExecResult:
        with self._lock:
            if self._closed:
                raise BackendUnavailable("this restricted session is closed; open a new one")
            return self._run(request)

    def _run(self, request: ExecRequest) -> ExecResult:
        limits = request.limits
        self._cell += 1
        filename = f"<cell-{self._cell}>"
        stdout, stderr = _CappedText(limits.output_bytes), _CappedText(limits.output_bytes)
        self._executor.set_sink(stdout)
        self._events, self._tool_calls, self._refusals = [], 0, 0
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
        linecache.cache[filename] = (
            len(request.code),
            None,
            request.code.splitlines(True),
            filename,
        )
        try:
            with _Watchdog(budget, limits) as watchdog:
                try:
                    shown = self._executor.execute(request.code, filename=filename, budget=budget)
                    if shown is not None:
                        stdout.write(shown + "\n")
                except Exception as exc:
                    error = exc
            if error is not None and not budget.exhausted:
                stderr.write(_format_error(error))
        finally:
            linecache.cache.pop(filename, None)
            self._budget = None
        self._events.extend(
            GuardDenied(guard=guard, detail=detail) for guard, detail in self._executor.last_denials
        )
        status, exit_code, message = self._settle(budget, error, limits)
        if stdout.truncated or stderr.truncated:
            self._events.append(LimitHit(limit="output_bytes", value=float(limits.output_bytes)))
        if self._refusals > MAX_REFUSAL_EVENTS:
            self._events.append(
                LimitHit(limit="tool_refusal_events", value=float(MAX_REFUSAL_EVENTS))
            )
        artifacts = collect_artifacts(
            str(self.workdir), before, blobs=self.blobs, limits=_ARTIFACT_LIMITS
        )
        return ExecResult(
            status=status,
            exit_code=exit_code,
            stdout=self.blobs.put(stdout.value()),
            stderr=self.blobs.put(stderr.value()),
            truncated=stdout.truncated or stderr.truncated,
            artifacts=artifacts,
            events=tuple(self._events),
            usage=Usage(
                cpu_seconds=round(watchdog.cpu_seconds(), 3),
                wall_seconds=round(time.monotonic() - watchdog.wall_start, 6),
                output_bytes=stdout.total + stderr.total,
                tool_calls=self._tool_calls,
            ),
            message=message,
        )

    def _settle(
        self, budget: OperationBudget, error: BaseException | None, limits: Limits
    ) -> tuple[ExecStatus, int | None, str]:
        reason = budget.reason()
        if reason == "wall_seconds":
            self._events.append(LimitHit(limit="wall_seconds", value=limits.wall_seconds))
            return ExecStatus.TIMEOUT, None, f"wall timeout after {limits.wall_seconds:g} s"
        if reason in ("cpu_seconds", "operations"):
            self._events.append(LimitHit(limit="cpu_seconds", value=limits.cpu_seconds))
            detail = "" if reason == "cpu_seconds" else " (operation budget)"
            return ExecStatus.TIMEOUT, None, f"cpu timeout after {limits.cpu_seconds:g} s{detail}"
        if reason == "memory_bytes":
            self._events.append(LimitHit(limit="memory_bytes", value=float(limits.memory_bytes)))
            return (
                ExecStatus.LIMIT_EXCEEDED,
                None,
                f"memory limit: the process grew by more than {limits.memory_bytes} bytes",
            )
        if error is None:
            return ExecStatus.OK, 0, ""
        kind = type(error).__name__
        text = _safe_str(error)
        if isinstance(error, MemoryError):
            self._events.append(LimitHit(limit="memory_bytes", value=float(limits.memory_bytes)))
            return ExecStatus.LIMIT_EXCEEDED, 1, f"MemoryError: {text}".rstrip(": ")
        return ExecStatus.ERROR, 1, f"{kind}: {text}" if text else kind

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


def _safe_str(error: BaseException) -> str:
    try:
        return str(error)[:_MESSAGE_CHARS]
    except Exception:
        return "<unprintable>"


def _cut_chain(error: BaseException) -> None:
    """Unlink ``__cause__``/``__context__`` past the first ``_MAX_CHAINED_ERRORS`` exceptions.

    The traceback is formatted in the host after the run, with no budget: a chain of a million
    ``raise ... from e`` must not be walked whole.
    """
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if len(seen) >= _MAX_CHAINED_ERRORS:
            current.__cause__ = current.__context__ = None
            continue
        pending += [e for e in (current.__cause__, current.__context__) if e is not None]


def _small_groups(error: BaseException) -> bool:
    """Do the exception groups under ``error`` hold at most ``_MAX_GROUPED_ERRORS`` exceptions?

    ``TracebackException`` builds a report for every member, shown or not.
    """
    pending: list[object] = [error]
    count = 0
    while pending:
        current = pending.pop()
        count += 1
        if count > _MAX_GROUPED_ERRORS:
            return False
        if isinstance(current, BaseExceptionGroup):
            members = current.exceptions
            if type(members) is not tuple:
                return False
            pending += members
        if isinstance(current, BaseException):
            pending += [e for e in (current.__cause__, current.__context__) if e is not None]
    return True


def _format_error(error: BaseException) -> str:
    """The traceback of user frames only (``<cell-N>``), or just the exception line."""
    try:
        _cut_chain(error)
        if not _small_groups(error):
            return f"{type(error).__name__}: {_safe_str(error)}\n"
        info = traceback.TracebackException.from_exception(error)
        pending: list[traceback.TracebackException | None] = [info]
        seen: set[int] = set()
        while pending:
            current = pending.pop()
            if current is None or id(current) in seen:
                continue
            seen.add(id(current))
            current.stack = traceback.StackSummary.from_list(
                [f for f in current.stack if f.filename.startswith("<cell-")]
            )
            pending += [current.__cause__, current.__context__]
        return "".join(info.format())
    except Exception:
        return f"{type(error).__name__}: <traceback unavailable>\n"
