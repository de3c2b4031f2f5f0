"""One call of a native session: send the cell, pump output and tool calls, settle how it ended.

Split out of ``native_session`` (which keeps the worker's lifecycle): :func:`run_call` is the
whole of one call, from the ``run`` frame to its :class:`~safeexec.model.values.ExecResult`.
What it uses of its session comes handed in as a :class:`CallScope` (its cgroup, meters, tools,
workdir and the backend's supply); it kills the worker through its handle and tells the session,
through the ``lose`` it is given, when the worker (and the session's state) is gone. The session
holds its lock for the call's duration.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import ToolGateway
from safeexec.backends.capping import HeadTailCapture
from safeexec.backends.displays import DisplayCollector
from safeexec.backends.exec_result import (
    CallRecord,
    InterruptReason,
    Settled,
    call_tool,
    finish,
    interrupted,
    raised,
    succeeded,
    timed_out,
)
from safeexec.backends.native.cgroup import SessionGroup
from safeexec.backends.native.handle import WorkerHandle
from safeexec.backends.native.meters import CpuMeter, DiskBudget
from safeexec.backends.native.procfs import (
    descendants,
    describe_death,
    is_zombie,
    peak_rss_bytes,
    processes_in_pid_namespace,
)
from safeexec.backends.native.supply import WorkerSupply
from safeexec.backends.native.template import _READ_CHUNK
from safeexec.backends.streaming import OutputSink, OutputTap
from safeexec.backends.workdir import collect_artifacts, scan
from safeexec.egress.proxy import EgressProxy
from safeexec.model.values import (
    ExecRequest,
    ExecResult,
    ExecStatus,
    Limits,
    NetworkConnection,
    StreamName,
    SyscallKilled,
)
from safeexec.sandbox.channel import ProtocolError, encode_frame
from safeexec.sandbox.protocol import Display, Done, Reply, Run, ToolCall, parse_worker_frame

__all__ = ["INTERRUPT_GRACE_SECONDS", "CallScope", "network_events", "read_some", "run_call"]

_CPU_POLL_SECONDS = 0.05
INTERRUPT_GRACE_SECONDS = 2.0
"""How long an interrupted cell has to return before its worker is killed (and state lost)."""
_LEFTOVER_ROUNDS = 50  # stop-and-kill sweeps before giving up and killing the worker too
# How long a call waits for connections the sandbox has closed to be torn down and recorded.
_EGRESS_SETTLE_SECONDS = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class CallScope:
    """What a call uses of its session, handed in by it: the same for the session's life."""

    workdir: Path
    blobs: BlobStore
    tools: ToolGateway | None
    tool_names: tuple[str, ...]
    limits: Limits  # the session's: its worker's rlimits and memory cgroup
    supply: WorkerSupply  # the backend's: its template reaps the worker
    group: SessionGroup
    cpu: CpuMeter
    disk: DiskBudget
    interrupt: threading.Event  # set by the session's interrupt(), from any thread
    egress: EgressProxy | None


@dataclass(slots=True)
class _CallState:
    stdout: HeadTailCapture
    stderr: HeadTailCapture
    record: CallRecord = field(default_factory=CallRecord)
    outcome: Done | None = None
    died: bool = False
    cpu_seen: float = 0.0  # the last CPU reading, for when the worker is gone by the end
    killed_for: str = ""  # "wall" | "cpu" | "disk" | "protocol" | "host" | "host-again"
    interrupted_for: InterruptReason | None = None  # SIGINT sent; the cell may still return
    grace_until: float = 0.0  # when an interrupted cell that has not returned is killed
    host_interrupt: bool = False  # a KeyboardInterrupt reached the host during the call
    oom_kills_before: int = 0  # the cgroup's OOM-kill count when the call started
    taps: tuple[OutputTap, OutputTap] | None = None  # stdout, stderr: streamed while read
    displays: DisplayCollector | None = None  # rich values (last expression, display())
    worker_lost: bool = False  # killed and handed to the session's ``lose``: state is gone


def run_call(
    scope: CallScope,
    worker: WorkerHandle,
    request: ExecRequest,
    on_output: OutputSink | None,
    *,
    lose: Callable[[WorkerHandle], None],
) -> tuple[ExecResult, bool]:
    """Run ``request`` on ``worker``: the result, and whether the host's Ctrl-C came during it.

    A worker the call kills is handed to ``lose`` (the session forgets it, and its state)."""
    limits = request.limits
    call = _CallState(
        stdout=HeadTailCapture(limits.output_bytes),
        stderr=HeadTailCapture(limits.output_bytes),
    )
    call.displays = DisplayCollector(scope.blobs)
    if on_output is not None:
        call.taps = (
            OutputTap(on_output, StreamName.STDOUT, limits.output_bytes),
            OutputTap(on_output, StreamName.STDERR, limits.output_bytes),
        )
    artifact_limits = scope.disk.artifact_limits
    before = scan(str(scope.workdir), artifact_limits)
    started = time.monotonic()
    deadline = started + limits.wall_seconds
    cpu_start = scope.group.cpu_seconds(worker.pid)
    call.oom_kills_before = scope.group.oom_kills()
    scope.interrupt.clear()
    try:
        worker.channel.settimeout(max(0.001, limits.wall_seconds))
        run = Run(code=request.code, stream=on_output is not None)
        worker.channel.sendall(encode_frame(run.to_message()))
    except (OSError, ProtocolError):
        call.died = True
    except KeyboardInterrupt:
        # The host's Ctrl-C as the frame went out (the cell may already be running): the pump
        # interrupts the cell first thing, as it does a Ctrl-C that comes a moment later.
        call.host_interrupt = True
    if not call.died:
        _pump(
            scope,
            worker,
            call,
            deadline=deadline,
            cpu_start=cpu_start,
            cpu_limit=limits.cpu_seconds,
        )
    if (
        call.outcome is not None
        and not call.killed_for
        and not scope.disk.mount.active
        and scope.disk.exceeded(worker.pid)
    ):
        # No mount holds the budget: a cell quicker than one poll is checked as it returns.
        call.killed_for = "disk"
    wall = time.monotonic() - started
    cpu_end = max(scope.group.cpu_seconds(worker.pid), call.cpu_seen)
    cpu = scope.cpu.end_call(cpu_end, call_start=cpu_start, budget=limits.cpu_seconds)
    rss = peak_rss_bytes(worker.status)
    settled = _settle(scope, worker, call, limits, lose)
    for event in network_events(scope.egress):
        call.record.record(event)
    artifacts = collect_artifacts(
        str(scope.workdir), before, blobs=scope.blobs, limits=artifact_limits
    )
    result = finish(
        settled,
        record=call.record,
        stdout=call.stdout,
        stderr=call.stderr,
        limits=limits,
        blobs=scope.blobs,
        artifacts=artifacts,
        cpu_seconds=cpu,
        wall_seconds=wall,
        max_rss_bytes=rss,
        state_lost=call.worker_lost,
        displays=call.displays,
        rung=worker.rung.value if worker.rung is not None else None,
    )
    return result, call.host_interrupt


def network_events(egress: EgressProxy | None) -> list[NetworkConnection]:
    """The connections through ``egress`` that ended since the last call; one whose sandbox end
    is closed already is waited for, a moment, to be reported now."""
    if egress is None:
        return []
    egress.settle(_EGRESS_SETTLE_SECONDS)
    return egress.take_events()


def _pump(
    scope: CallScope,
    worker: WorkerHandle,
    call: _CallState,
    *,
    deadline: float,
    cpu_start: float,
    cpu_limit: float,
) -> None:
    """Move bytes until the worker answers, dies, or overruns a limit (then kill it)."""
    streams = {worker.stdout: 0, worker.stderr: 1}
    next_cpu_check = next_disk_check = time.monotonic() + _CPU_POLL_SECONDS
    try:
        while call.outcome is None and not call.died and not call.killed_for:
            try:
                now = time.monotonic()
                if call.interrupted_for:
                    if now >= call.grace_until:
                        call.killed_for = call.interrupted_for
                        break
                elif now >= deadline:
                    _interrupt_cell(worker, call, "wall")
                elif scope.interrupt.is_set() or call.host_interrupt:
                    _interrupt_cell(worker, call, "host")
                until = call.grace_until if call.interrupted_for else deadline
                wait = max(0.0, min(until - now, _CPU_POLL_SECONDS))
                for fd, _mask in worker.poller.poll(math.ceil(wait * 1000)):
                    if fd in streams:
                        data = read_some(fd)
                        if data:
                            _take(call, streams[fd], data)
                        elif data is not None:
                            worker.poller.unregister(fd)  # its end of file: for good
                    elif fd == worker.pidfd:
                        call.died = True
                    else:
                        _on_channel(scope, worker, call, until)
                        if call.killed_for:
                            return
                if time.monotonic() >= next_cpu_check:
                    next_cpu_check = time.monotonic() + _CPU_POLL_SECONDS
                    call.cpu_seen = scope.group.cpu_seconds(worker.pid)
                    if call.cpu_seen - cpu_start > cpu_limit and not call.interrupted_for:
                        _interrupt_cell(worker, call, "cpu")
                if time.monotonic() >= next_disk_check:
                    scan_started = time.monotonic()
                    if scope.disk.exceeded(worker.pid):
                        call.killed_for = "disk"
                        break
                    # A big workdir is scanned less often: at most a tenth of the host's time.
                    scanned_for = time.monotonic() - scan_started
                    next_disk_check = time.monotonic() + max(_CPU_POLL_SECONDS, 10 * scanned_for)
            except KeyboardInterrupt:
                # The host's own Ctrl-C: interrupt the cell like a kernel; a second one kills.
                call.host_interrupt = True
                if call.interrupted_for:
                    call.killed_for = "host-again"
                else:
                    _interrupt_cell(worker, call, "host")
    finally:
        scope.interrupt.clear()
        # Output written before the answer is already in the pipes; take it, bounded.
        for index, fd in enumerate((worker.stdout, worker.stderr)):
            stream_budget = call.stdout.cap + 4 * _READ_CHUNK
            while stream_budget > 0:
                data = read_some(fd)
                if not data:
                    break
                _take(call, index, data)
                stream_budget -= len(data)
        for tap in call.taps or ():
            tap.close()


def _take(call: _CallState, index: int, data: bytes) -> None:
    """Bytes read from stream ``index`` (0 stdout, 1 stderr): captured, and streamed if asked."""
    (call.stdout, call.stderr)[index].feed(data)
    if call.taps is not None:
        call.taps[index].feed(data)


def _interrupt_cell(worker: WorkerHandle, call: _CallState, reason: InterruptReason) -> None:
    """Send the cell ``SIGINT`` (the worker makes it ``KeyboardInterrupt``); grace starts."""
    if call.interrupted_for:
        return  # one interrupt per call; its grace is not extended
    call.interrupted_for = reason
    call.grace_until = time.monotonic() + INTERRUPT_GRACE_SECONDS
    with contextlib.suppress(ProcessLookupError):
        signal.pidfd_send_signal(worker.pidfd, signal.SIGINT)


def _on_channel(scope: CallScope, worker: WorkerHandle, call: _CallState, deadline: float) -> None:
    try:
        data = worker.channel.recv(_READ_CHUNK)
    except BlockingIOError:
        return
    except OSError:
        data = b""
    if not data:
        call.died = True
        return
    try:
        frames = [parse_worker_frame(frame) for frame in worker.decoder.feed(data)]
    except ProtocolError:
        call.killed_for = "protocol"
        return
    for frame in frames:
        if isinstance(frame, Done):
            call.outcome = frame
        elif isinstance(frame, Display):
            if call.displays is not None:
                call.displays.take(frame)
        else:
            _answer_tool(scope, worker, call, frame, deadline)
            if call.killed_for or call.died:
                return


def _answer_tool(
    scope: CallScope, worker: WorkerHandle, call: _CallState, frame: ToolCall, deadline: float
) -> None:
    name = frame.name
    if scope.tools is None or name not in scope.tool_names:
        reply = Reply(ok=False, error=f"no tool named {name[:100]!r} is granted")
    else:
        try:
            answer = call_tool(scope.tools, name, frame.arguments(), call.record)
            reply = Reply(ok=answer.ok, value=answer.value, error=answer.error)
        except KeyboardInterrupt:
            # Ctrl-C while the host ran the tool: the code still gets its reply (it waits
            # for one), then the interrupt.
            reply = Reply(ok=False, error=f"the host interrupted tool {name[:100]!r}")
            call.host_interrupt = True
            _interrupt_cell(worker, call, "host")
    try:
        body = encode_frame(reply.to_message())
    except (TypeError, ValueError, ProtocolError):
        failed = Reply(ok=False, error=f"tool {name[:100]!r} returned a value that is not JSON")
        body = encode_frame(failed.to_message())
    try:
        worker.channel.settimeout(max(0.001, deadline - time.monotonic()))
        worker.channel.sendall(body)
    except TimeoutError:
        call.killed_for = "wall"  # the code stopped reading its own replies
    except OSError:
        call.died = True  # the worker closed its end


def _settle(
    scope: CallScope,
    worker: WorkerHandle,
    call: _CallState,
    limits: Limits,
    lose: Callable[[WorkerHandle], None],
) -> Settled:
    """Decide how a finished call ended, killing and reaping the worker if it must go (then
    handing it to ``lose``)."""
    record = call.record
    if call.outcome is not None and not call.killed_for and call.interrupted_for:
        # The cell returned within its grace: the worker and its state live on, but not the
        # processes it started, which the limit (or the host) stops with it.
        leftovers = _kill_leftovers(worker)
        if leftovers is not None:
            return interrupted(
                call.interrupted_for,
                limits=limits,
                record=record,
                detail=_leftover_note(leftovers),
            )
        call.killed_for = call.interrupted_for  # they kept coming: the worker goes too
    if call.outcome is not None and not call.killed_for:
        if call.outcome.ok:
            return succeeded()
        # The worker's own rlimit is what a MemoryError met, whatever the call asked for.
        return raised(
            call.outcome.error_type,
            call.outcome.error_message,
            traceback=call.outcome.error_traceback,
            limits=scope.limits,
            record=record,
        )
    template = scope.supply.template()
    if call.killed_for:
        leftovers = worker.kill(verify=True)
        template.exit_status(worker.pid, timeout=1.0)
        lose(worker)
        call.worker_lost = True
        tail = _leftover_note(leftovers)
        if call.interrupted_for and call.outcome is None:
            grace = f"{INTERRUPT_GRACE_SECONDS:g} s"
            tail = f"; the cell did not return within {grace} of its interrupt{tail}"
        elif call.interrupted_for:
            tail = f"; the processes it started could not be stopped{tail}"
        if call.killed_for in ("host", "host-again"):
            if call.killed_for == "host-again":
                again = "; interrupted again before the cell returned"
                tail = again + _leftover_note(leftovers)
            return Settled(
                status=ExecStatus.KILLED,
                exit_code=None,
                message=f"killed: interrupted by the host{tail}",
            )
        if call.killed_for == "wall":
            return timed_out("wall_seconds", limits=limits, record=record, detail=tail)
        if call.killed_for == "cpu":
            return timed_out("cpu_seconds", limits=limits, record=record, detail=tail)
        if call.killed_for == "disk":
            record.limit_hit("disk_bytes", float(scope.disk.budget_bytes))
            return Settled(
                status=ExecStatus.LIMIT_EXCEEDED,
                exit_code=None,
                message=f"killed: {scope.disk.overrun()}{tail}",
            )
        return Settled(
            status=ExecStatus.KILLED,
            exit_code=None,
            message="killed: the worker broke the channel protocol",
        )
    status = template.exit_status(worker.pid, timeout=2.0)
    worker.kill()
    lose(worker)
    call.worker_lost = True
    message, code, number = describe_death(status)
    if number == signal.SIGSYS:
        record.record(SyscallKilled(signal=number))
    if number == signal.SIGKILL and scope.group.oom_kills() > call.oom_kills_before:
        # memory.max is the session's memory limit, not the call's.
        record.limit_hit("memory_bytes", float(scope.limits.memory_bytes))
        return Settled(
            status=ExecStatus.LIMIT_EXCEEDED,
            exit_code=code,
            message="killed: the session's memory cgroup is full",
        )
    return Settled(
        status=ExecStatus.KILLED if number is not None else ExecStatus.ERROR,
        exit_code=code,
        message=message,
    )


def _kill_leftovers(worker: WorkerHandle) -> int | None:
    """Kill every process of the session but the worker; how many, or ``None`` if they kept
    coming back (a fork bomb outrunning the sweeps: then the caller kills the worker)."""
    killed: set[int] = set()
    for _ in range(_LEFTOVER_ROUNDS):
        if worker.private_pidns:
            pids = processes_in_pid_namespace(worker.pidns)
        else:
            pids = descendants(worker.pid)
        others = [pid for pid in pids if pid != worker.pid and not is_zombie(pid)]
        if not others:
            return len(killed)
        # Stopped first, so none forks again while the others are killed.
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in others:
                with contextlib.suppress(OSError):
                    os.kill(pid, sig)
        killed.update(others)
        time.sleep(0.005)
    return None


def _leftover_note(count: int) -> str:
    if not count:
        return ""
    return f"; killed {count} leftover process{'es' if count > 1 else ''}"


def read_some(fd: int) -> bytes | None:
    """Read what is available: bytes, ``b""`` at end of file, ``None`` if nothing right now."""
    try:
        return os.read(fd, _READ_CHUNK)
    except BlockingIOError:
        return None
    except OSError:
        return b""
