"""Turning a finished call into an ExecResult: one meaning for every backend's measurements."""

from __future__ import annotations

from pathlib import Path

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import ToolDescriptor
from safeexec.backends.capping import HeadTailCapture
from safeexec.backends.exec_result import (
    CallRecord,
    call_tool,
    finish,
    raised,
    succeeded,
    timed_out,
)
from safeexec.capabilities.gateway import ToolReply
from safeexec.model.codec import JSONValue
from safeexec.model.values import ExecStatus, LimitHit, Limits, ToolCalled, ToolRefused

LIMITS = Limits(wall_seconds=2.0, cpu_seconds=1.5, memory_bytes=1000, output_bytes=4)


class _Gateway:
    def __init__(self, reply: ToolReply | None) -> None:
        self.reply = reply

    def describe(self) -> tuple[ToolDescriptor, ...]:
        return ()

    def invoke(self, name: str, arguments: JSONValue) -> ToolReply:
        if self.reply is None:
            raise RuntimeError("secret host detail")
        return self.reply


def test_a_memory_error_is_the_memory_limit_and_other_errors_are_errors() -> None:
    record = CallRecord()
    memory = raised("MemoryError", "", limits=LIMITS, record=record)
    assert (memory.status, memory.exit_code, memory.message) == (
        ExecStatus.LIMIT_EXCEEDED,
        1,
        "MemoryError",
    )
    assert record.events == [LimitHit(limit="memory_bytes", value=1000.0)]
    error = raised("KeyError", "'x'", limits=LIMITS, record=record)
    assert (error.status, error.message) == (ExecStatus.ERROR, "KeyError: 'x'")
    assert len(record.events) == 1


def test_timeouts_name_their_limit_in_the_message_and_the_event() -> None:
    record = CallRecord()
    wall = timed_out("wall_seconds", limits=LIMITS, record=record, detail="; killed 2")
    cpu = timed_out("cpu_seconds", limits=LIMITS, record=record)
    assert (wall.status, wall.exit_code) == (ExecStatus.TIMEOUT, None)
    assert (wall.message, cpu.message) == (
        "wall timeout after 2 s; killed 2",
        "cpu timeout after 1.5 s",
    )
    assert record.events == [
        LimitHit(limit="wall_seconds", value=2.0),
        LimitHit(limit="cpu_seconds", value=1.5),
    ]


def test_a_raising_gateway_is_a_failed_call_that_names_no_detail() -> None:
    record = CallRecord()
    reply = call_tool(_Gateway(None), "fetch", {}, record)
    assert not reply.ok and reply.error == "tool 'fetch' failed: RuntimeError"
    assert record.tool_calls == 1 and record.events == []


def test_finish_keeps_the_gateways_events_in_order_and_flags_the_output_cap(tmp_path: Path) -> None:
    refused = ToolReply(
        ok=False, error="no", event=ToolRefused(tool="t", capability_id="c", reason="r")
    )
    record = CallRecord()
    gateway = _Gateway(refused)
    for _ in range(10):
        call_tool(gateway, "t", {}, record)
    gateway.reply = ToolReply(
        ok=True,
        event=ToolCalled(tool="t", capability_id="c", arguments_sha256="a", result_sha256="r"),
    )
    call_tool(gateway, "t", {}, record)
    stdout, stderr = HeadTailCapture(4), HeadTailCapture(4)
    stdout.feed(b"123456")
    result = finish(
        succeeded(),
        record=record,
        stdout=stdout,
        stderr=stderr,
        limits=LIMITS,
        blobs=BlobStore(tmp_path),
        artifacts=(),
        cpu_seconds=0.12345,
        wall_seconds=0.5,
    )
    refusals = [e for e in result.events if isinstance(e, ToolRefused)]
    assert len(refusals) == 10
    assert isinstance(result.events[10], ToolCalled)
    assert result.events[-1] == LimitHit(limit="output_bytes", value=4.0)
    assert len(result.events) == 12
    assert result.truncated and result.status is ExecStatus.OK
    assert (result.usage.output_bytes, result.usage.tool_calls) == (6, 11)
    assert result.usage.cpu_seconds == 0.123


def test_a_raised_error_is_a_value_whose_traceback_the_host_trims_again() -> None:
    # The sandbox's text is not trusted to be trimmed: a safeexec frame in it is dropped here.
    text = (
        "Traceback (most recent call last):\n"
        '  File "/x/safeexec/sandbox/worker.py", line 9, in _run_cell\n'
        "    shown = executor.execute(code)\n"
        '  File "<cell-2>", line 1, in <module>\n'
        "    int('x')\n"
        "ValueError: invalid literal for int() with base 10: 'x'\n"
    )
    settled = raised("ValueError", "bad", limits=LIMITS, record=CallRecord(), traceback=text)
    assert settled.error is not None
    assert (settled.error.name, settled.error.value) == ("ValueError", "bad")
    assert "safeexec" not in settled.error.traceback
    assert '  File "<cell-2>", line 1, in <module>' in settled.error.traceback
    memory = raised("MemoryError", "", limits=LIMITS, record=CallRecord(), traceback=text)
    assert memory.status is ExecStatus.LIMIT_EXCEEDED and memory.error is not None
    assert succeeded().error is None


def test_finish_carries_the_settled_error_into_the_result(tmp_path: Path) -> None:
    settled = raised("KeyError", "'k'", limits=LIMITS, record=CallRecord(), traceback="")
    result = finish(
        settled,
        record=CallRecord(),
        stdout=HeadTailCapture(10),
        stderr=HeadTailCapture(10),
        limits=LIMITS,
        blobs=BlobStore(tmp_path / "blobs"),
        artifacts=(),
        cpu_seconds=0.0,
        wall_seconds=0.0,
    )
    assert result.error == settled.error
