"""The dsl mode in the conformance suite: the same result shapes as every backend for results,
errors, timeouts, output caps, the network and capabilities (DSL programs for the same tasks)."""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_backend_conformance import Harness

from safeexec.backends.base import BackendSession, SessionSpec
from safeexec.backends.dsl import DslBackend
from safeexec.capabilities import CapabilitySet, tool
from safeexec.dsl.limits import DslLimits
from safeexec.model import ExecStatus


class _UnplannedIterations(DslBackend):
    """Iterations are limited by time here, not by the plan, so the timeout tests can run long
    (as a policy's ``[dsl] max_iterations`` would allow)."""

    def open(self, spec: SessionSpec) -> BackendSession:
        return super().open(dataclasses.replace(spec, dsl=DslLimits(max_iterations=10**12)))


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    h = Harness(_UnplannedIterations(), tmp_path)
    yield h
    for session in h.sessions:
        session.close()


def test_same_program_same_result(harness: Harness) -> None:
    session = harness.open()
    result = harness.run(session, "print('sum', sum(range(10)))\nreturn 5 * 4 * 3 * 2")
    assert result.status is ExecStatus.OK and result.exit_code == 0
    assert harness.stdout(result) == "sum 45\n120\n"
    assert harness.stderr(result) == "" and result.message == "" and not result.truncated


def test_an_error_is_an_error_status_with_the_exception(harness: Harness) -> None:
    session = harness.open()
    result = harness.run(session, "x = 0\nreturn 1 / x")
    assert result.status is ExecStatus.ERROR and result.exit_code == 1
    assert result.message == "ZeroDivisionError: division by zero"
    stderr = harness.stderr(result)
    assert stderr.startswith("Traceback") and "<cell-" in stderr
    assert stderr.rstrip().endswith("ZeroDivisionError: division by zero")


@pytest.mark.parametrize("limit", ["wall_seconds", "cpu_seconds"])
def test_a_long_loop_is_a_timeout(harness: Harness, limit: str) -> None:
    session = harness.open()
    limits = {"wall_seconds": 30.0, "cpu_seconds": 30.0, limit: 0.5}
    spin = "n = 0\nfor i in range(100000):\n    for j in range(100000):\n        n += 1\nreturn n"
    result = harness.run(session, spin, **limits)
    assert result.status is ExecStatus.TIMEOUT and result.exit_code is None
    assert any(e.kind == "limit_hit" and e.limit == limit for e in result.events)
    assert harness.stdout(harness.run(session, "print('alive')")) == "alive\n"


def test_output_over_the_cap_is_truncated_head_and_tail(harness: Harness) -> None:
    session = harness.open()
    result = harness.run(session, "for i in range(2000):\n    print('line', i)", output_bytes=200)
    assert result.status is ExecStatus.OK and result.truncated
    out = harness.stdout(result)
    assert out.startswith("line 0\n") and out.endswith("line 1999\n")
    assert "bytes omitted" in out and len(out) < 300
    assert any(e.kind == "limit_hit" and e.limit == "output_bytes" for e in result.events)


def test_there_is_no_network(harness: Harness) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.3)
    port = listener.getsockname()[1]
    hits: list[object] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            hits.append(listener.accept())

    thread = threading.Thread(target=accept)
    thread.start()
    session = harness.open()
    result = harness.run(session, f"s = socket()\nreturn connect(s, '127.0.0.1', {port})")
    thread.join()
    listener.close()
    assert hits == []
    assert (
        result.status is ExecStatus.ERROR and "SX701 unknown tool or op `socket`" in result.message
    )


def test_tools_only_through_capabilities(harness: Harness) -> None:
    calls: list[str] = []

    @tool(effects=["write"])
    def record(note: str) -> dict[str, int]:
        calls.append(note)
        return {"count": len(calls)}

    caps = CapabilitySet()
    caps.grant(record, max_calls=1)
    session = harness.open(tools=caps)
    result = harness.run(session, "return record(note='first')['count']")
    assert result.status is ExecStatus.OK and harness.stdout(result) == "1\n"
    assert [e.kind for e in result.events] == ["tool_called"]
    # The grant has no calls left: the plan (1 call) is refused before anything runs.
    refused = harness.run(session, "return record(note='second')")
    assert refused.status is ExecStatus.ERROR and "SX704" in refused.message
    assert refused.events == ()
    assert calls == ["first"]
    unbound = harness.run(harness.open(), "return record(note='third')")
    assert unbound.status is ExecStatus.ERROR and "SX701" in unbound.message
