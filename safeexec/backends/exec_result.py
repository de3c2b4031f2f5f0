"""Turning a finished call into an :class:`~safeexec.model.values.ExecResult`, for every backend.

A backend measures a call (its output, its CPU and wall time, what its code raised or why it was
killed); this module says what the measurements mean, the same way for every mode: which status
and message a timeout or a ``MemoryError`` gets, which ``LimitHit`` events go with them, how tool
calls are run and counted (the gateway caps how many tool events a step keeps).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from safeexec._support.tracebacks import trim_traceback_lines
from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import ToolGateway
from safeexec.backends.capping import HeadTailCapture
from safeexec.backends.displays import DisplayCollector
from safeexec.capabilities.gateway import ToolReply
from safeexec.model.codec import JSONValue
from safeexec.model.fieldwise import Fieldwise
from safeexec.model.values import (
    Artifact,
    ExecError,
    ExecResult,
    ExecStatus,
    ExecutionEvent,
    LimitHit,
    Limits,
    OutputCut,
    Usage,
)
from safeexec.sandbox.protocol import MAX_TRACEBACK_CHARS

__all__ = [
    "CallRecord",
    "InterruptReason",
    "Settled",
    "call_tool",
    "finish",
    "interrupted",
    "output_cut",
    "raised",
    "succeeded",
    "timed_out",
]

InterruptReason = Literal["wall", "cpu", "host"]
"""Why a cell was interrupted: its wall or CPU time limit, or the host (its caller cancelled)."""


@dataclass(slots=True)
class CallRecord:
    """The events and tool calls of one call in progress."""

    events: list[ExecutionEvent] = field(default_factory=list)
    tool_calls: int = 0

    def record(self, event: ExecutionEvent) -> None:
        """Keep an event of the call (the tool gateway already caps a step's tool events)."""
        self.events.append(event)

    def limit_hit(self, limit: str, value: float) -> None:
        """Record that the call reached ``limit`` (a ``Limits`` field name or a backend's own)."""
        self.events.append(LimitHit(limit=limit, value=value))


def call_tool(
    gateway: ToolGateway, name: str, arguments: JSONValue, record: CallRecord
) -> ToolReply:
    """Run one tool call through ``gateway``, counted and recorded; never raises."""
    record.tool_calls += 1
    try:
        reply = gateway.invoke(name, arguments)
    except Exception as exc:  # a gateway must not raise; fail closed for the code
        return ToolReply(ok=False, error=f"tool {name!r} failed: {type(exc).__name__}")
    if reply.event is not None:
        record.record(reply.event)
    return reply


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class Settled(Fieldwise):
    """How a call ended: its status, exit code, a one-line message (empty when it ran fine) and,
    when the code raised, the error as a value."""

    status: ExecStatus
    exit_code: int | None
    message: str = ""
    error: ExecError | None = None


def succeeded() -> Settled:
    """The code ran to its end."""
    return Settled(status=ExecStatus.OK, exit_code=0)


def raised(
    kind: str, text: str, *, limits: Limits, record: CallRecord, traceback: str = ""
) -> Settled:
    """The code raised ``kind`` with message ``text``; a ``MemoryError`` is the memory limit.

    ``traceback`` is the exception's traceback text as the sandbox formatted it; it is trimmed
    again here (the sandbox's text is not trusted to be trimmed) and its end kept if long."""
    kept = "\n".join(trim_traceback_lines(traceback[-MAX_TRACEBACK_CHARS:].split("\n")))
    error = ExecError(name=kind, value=text, traceback=kept)
    if kind == "MemoryError":
        record.limit_hit("memory_bytes", float(limits.memory_bytes))
        return Settled(
            status=ExecStatus.LIMIT_EXCEEDED,
            exit_code=1,
            message=f"MemoryError: {text}".rstrip(": "),
            error=error,
        )
    return Settled(
        status=ExecStatus.ERROR,
        exit_code=1,
        message=f"{kind}: {text}" if text else kind,
        error=error,
    )


def timed_out(
    limit: Literal["wall_seconds", "cpu_seconds"],
    *,
    limits: Limits,
    record: CallRecord,
    detail: str = "",
) -> Settled:
    """The call was stopped at its wall or CPU time limit; ``detail`` is appended to the message."""
    seconds = limits.wall_seconds if limit == "wall_seconds" else limits.cpu_seconds
    record.limit_hit(limit, seconds)
    kind = "wall" if limit == "wall_seconds" else "cpu"
    return Settled(
        status=ExecStatus.TIMEOUT,
        exit_code=None,
        message=f"{kind} timeout after {seconds:g} s{detail}",
    )


def interrupted(
    reason: InterruptReason, *, limits: Limits, record: CallRecord, detail: str = ""
) -> Settled:
    """The cell was interrupted and returned within its grace, so the session's state is kept.

    At a time limit that is still a timeout (the status says why the call stopped; the result's
    ``state_lost`` says whether the state survived); at the host's request it is ``interrupted``.
    """
    if reason == "host":
        return Settled(
            status=ExecStatus.INTERRUPTED,
            exit_code=None,
            message=f"interrupted by the host; session state kept{detail}",
        )
    limit: Literal["wall_seconds", "cpu_seconds"] = (
        "wall_seconds" if reason == "wall" else "cpu_seconds"
    )
    return timed_out(
        limit, limits=limits, record=record, detail=f"; interrupted, state kept{detail}"
    )


def finish(
    settled: Settled,
    *,
    record: CallRecord,
    stdout: HeadTailCapture,
    stderr: HeadTailCapture,
    limits: Limits,
    blobs: BlobStore,
    artifacts: tuple[Artifact, ...],
    cpu_seconds: float,
    wall_seconds: float,
    max_rss_bytes: int = 0,
    state_lost: bool = False,
    displays: DisplayCollector | None = None,
    rung: str | None = None,
) -> ExecResult:
    """The result of a finished call: output stored as blobs, the output-cap event added, and
    the rich values ``displays`` collected; ``rung`` is the confinement rung it ran on."""
    truncated = stdout.truncated or stderr.truncated
    if truncated:
        record.limit_hit("output_bytes", float(limits.output_bytes))
    out, err = stdout.value(), stderr.value()
    stdout_ref = blobs.put(out)
    return ExecResult(
        status=settled.status,
        exit_code=settled.exit_code,
        stdout=stdout_ref,
        # Most cells write nothing to either stream: one blob, stored once.
        stderr=stdout_ref if err == out else blobs.put(err),
        truncated=truncated,
        artifacts=artifacts,
        events=tuple(record.events),
        usage=Usage(
            cpu_seconds=round(cpu_seconds, 3),
            wall_seconds=round(wall_seconds, 6),
            max_rss_bytes=max_rss_bytes,
            output_bytes=stdout.total + stderr.total,
            tool_calls=record.tool_calls,
        ),
        message=settled.message,
        state_lost=state_lost,
        error=settled.error,
        stdout_cut=output_cut(stdout),
        stderr_cut=output_cut(stderr),
        displays=tuple(displays.displays) if displays is not None else (),
        displays_dropped=displays.dropped if displays is not None else 0,
        rung=rung,
    )


def output_cut(capture: HeadTailCapture) -> OutputCut | None:
    """What ``capture``'s cap left out of its stream, counted (``None``: nothing)."""
    omitted_bytes, omitted_lines = capture.omitted()
    if not omitted_bytes:
        return None
    return OutputCut(omitted_bytes=omitted_bytes, omitted_lines=omitted_lines)
