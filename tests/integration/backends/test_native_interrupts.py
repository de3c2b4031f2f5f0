"""Native interrupts: a time limit or the host interrupts the cell like a kernel, state kept."""

from __future__ import annotations

import _thread
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import CallInterrupted, SessionSpec, ToolDescriptor, ToolReply
from safeexec.backends.native import NativeBackend, NativeSession
from safeexec.backends.native import call as call_module
from safeexec.model.codec import JSONValue
from safeexec.model.values import ExecRequest, ExecResult, ExecStatus, LimitHit, Limits

SLEEP_FOREVER = "import time\nwhile True:\n    time.sleep(0.05)\n"
SWALLOW_INTERRUPTS = """
import time
while True:
    try:
        time.sleep(0.05)
    except KeyboardInterrupt:
        pass
"""


@pytest.fixture(scope="module")
def backend() -> Iterator[NativeBackend]:
    instance = NativeBackend()
    yield instance
    instance.close()


@pytest.fixture
def session(backend: NativeBackend, tmp_path: Path) -> Iterator[NativeSession]:
    workdir = tmp_path / "work"
    workdir.mkdir()
    opened = backend.open(SessionSpec(workdir=workdir, blobs=BlobStore(tmp_path / "blobs")))
    yield opened
    opened.close()


def run(session: NativeSession, code: str, **limits: float) -> ExecResult:
    return session.run(ExecRequest(action_id="t", code=code, limits=Limits(**limits)))  # type: ignore[arg-type]


def text(session: NativeSession, ref: object) -> str:
    return session.blobs.get(ref).decode()  # type: ignore[arg-type]


def test_a_wall_timeout_interrupts_the_cell_and_keeps_state(session: NativeSession) -> None:
    run(session, "x = 41")
    result = run(session, SLEEP_FOREVER, wall_seconds=0.5)
    assert result.status is ExecStatus.TIMEOUT
    assert not result.state_lost
    assert result.message == "wall timeout after 0.5 s; interrupted, state kept"
    assert LimitHit(limit="wall_seconds", value=0.5) in result.events
    assert text(session, result.stderr).endswith("KeyboardInterrupt\n")
    after = run(session, "x + 1")
    assert (after.status, text(session, after.stdout)) == (ExecStatus.OK, "42\n")


def test_a_cpu_limit_interrupts_the_cell_and_keeps_state(session: NativeSession) -> None:
    run(session, "y = 'kept'")
    result = run(session, "while True:\n    pass\n", cpu_seconds=0.3, wall_seconds=60)
    assert (result.status, result.state_lost) == (ExecStatus.TIMEOUT, False)
    assert result.message == "cpu timeout after 0.3 s; interrupted, state kept"
    assert text(session, run(session, "y").stdout) == "'kept'\n"


def test_code_that_swallows_the_interrupt_is_killed_and_reports_lost_state(
    session: NativeSession,
) -> None:
    run(session, "z = 1")
    result = run(session, SWALLOW_INTERRUPTS, wall_seconds=0.3)
    assert result.status is ExecStatus.TIMEOUT
    assert result.state_lost
    assert "did not return within" in result.message
    # It started no process, so none is reported killed.
    assert "leftover" not in result.message
    after = run(session, "print('fresh')")
    assert after.state_lost and "state from before was lost" in after.message
    assert text(session, after.stdout) == "fresh\n"


def test_processes_the_code_left_running_are_counted_when_killed(session: NativeSession) -> None:
    code = "import os, time\nif os.fork() == 0:\n    time.sleep(3600)\n    os._exit(0)\n"
    result = run(session, code + SWALLOW_INTERRUPTS, wall_seconds=0.5)
    assert result.status is ExecStatus.TIMEOUT
    assert result.message.endswith("; killed 1 leftover process")


def test_an_interrupted_cell_takes_its_processes_but_not_the_state_with_it(
    session: NativeSession,
) -> None:
    run(session, "w = 'kept'")
    code = "import os, time\nif os.fork() == 0:\n    time.sleep(3600)\n    os._exit(0)\n"
    result = run(session, code + SLEEP_FOREVER, wall_seconds=0.5)
    assert (result.status, result.state_lost) == (ExecStatus.TIMEOUT, False)
    assert result.message == (
        "wall timeout after 0.5 s; interrupted, state kept; killed 1 leftover process"
    )
    assert session.process_ids() == [session.pid]
    assert text(session, run(session, "w").stdout) == "'kept'\n"


def test_interrupt_from_another_thread_stops_the_cell(session: NativeSession) -> None:
    run(session, "n = 7")
    started = session.workdir / "started"
    code = "open('started', 'w').close()\n" + SLEEP_FOREVER

    def interrupt_once_started() -> None:
        deadline = time.monotonic() + 60  # bounded: a cell that never starts fails the test
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        session.interrupt()

    thread = threading.Thread(target=interrupt_once_started)
    thread.start()
    result = run(session, code, wall_seconds=60)
    thread.join()
    assert result.status is ExecStatus.INTERRUPTED
    assert result.message == "interrupted by the host; session state kept"
    assert not any(isinstance(e, LimitHit) for e in result.events)
    assert text(session, run(session, "n * 6").stdout) == "42\n"


def test_interrupt_between_calls_does_nothing(session: NativeSession) -> None:
    session.interrupt()
    result = run(session, "print('runs')")
    assert (result.status, text(session, result.stdout)) == (ExecStatus.OK, "runs\n")


class _InterruptingGateway:
    """One tool, ``slow``; its first call is interrupted by a Ctrl-C in the host."""

    def __init__(self) -> None:
        self.calls = 0

    def describe(self) -> tuple[ToolDescriptor, ...]:
        return (ToolDescriptor(name="slow", description="slow tool"),)

    def invoke(self, name: str, arguments: JSONValue) -> ToolReply:
        self.calls += 1
        if self.calls == 1:
            _thread.interrupt_main()
            time.sleep(0.5)  # the KeyboardInterrupt lands in here, in the host's main thread
        return ToolReply(ok=True, value=self.calls)


def test_a_host_interrupt_during_a_tool_call_keeps_the_channel_in_step(
    backend: NativeBackend, tmp_path: Path
) -> None:
    (tmp_path / "work").mkdir()
    spec = SessionSpec(
        workdir=tmp_path / "work",
        blobs=BlobStore(tmp_path / "blobs"),
        tools=_InterruptingGateway(),
    )
    with backend.open(spec) as session:
        with pytest.raises(CallInterrupted) as caught:
            run(session, "k = 'kept'\nprint(slow())\n" + SLEEP_FOREVER, wall_seconds=60)
        result = caught.value.result
        assert result.status is ExecStatus.INTERRUPTED
        assert result.message == "interrupted by the host; session state kept"
        assert text(session, result.stdout) == ""  # the reply was consumed, then interrupted
        # The next call gets its own reply, not the interrupted one's.
        after = run(session, "print(k, slow())")
        assert (after.status, text(session, after.stdout)) == (ExecStatus.OK, "kept 2\n")


def test_a_host_keyboard_interrupt_interrupts_the_cell_and_carries_the_result(
    session: NativeSession,
) -> None:
    started = session.workdir / "started"
    code = "m = 5\nopen('started', 'w').close()\n" + SLEEP_FOREVER

    def ctrl_c_once_started() -> None:
        deadline = time.monotonic() + 60  # bounded: a cell that never starts fails the test
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        _thread.interrupt_main()

    thread = threading.Thread(target=ctrl_c_once_started)
    thread.start()
    with pytest.raises(CallInterrupted) as caught:
        run(session, code, wall_seconds=60)
    thread.join()
    assert caught.value.result.status is ExecStatus.INTERRUPTED
    assert text(session, run(session, "m").stdout) == "5\n"


class _InterruptAfterSend:
    """The worker's channel, but the host's Ctrl-C lands just after the run frame went out.

    The worker is stopped before the frame is sent and resumed only after the host's ``SIGINT``
    went out, so the signal always reaches a worker whose request is still unread.
    """

    def __init__(self, channel: socket.socket, pidfd: int) -> None:
        self._channel = channel
        self._pidfd = pidfd
        self._fired = False

    def sendall(self, data: bytes) -> None:
        if self._fired:
            self._channel.sendall(data)
            return
        self._fired = True
        signal.pidfd_send_signal(self._pidfd, signal.SIGSTOP)
        self._channel.sendall(data)
        raise KeyboardInterrupt

    def __getattr__(self, name: str) -> object:
        return getattr(self._channel, name)


def test_a_host_keyboard_interrupt_as_the_cell_starts_still_interrupts_the_cell(
    session: NativeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(session, "m = 5")
    worker = session._worker
    assert worker is not None
    interrupt_cell = call_module._interrupt_cell

    def interrupt_then_resume(*args: object) -> None:
        interrupt_cell(*args)  # type: ignore[arg-type]
        signal.pidfd_send_signal(worker.pidfd, signal.SIGCONT)

    monkeypatch.setattr(call_module, "_interrupt_cell", interrupt_then_resume)
    channel = worker.channel
    worker.channel = _InterruptAfterSend(channel, worker.pidfd)  # type: ignore[assignment]
    try:
        with pytest.raises(CallInterrupted) as caught:
            run(session, SLEEP_FOREVER, wall_seconds=60)
    finally:
        worker.channel = channel
    assert caught.value.result.status is ExecStatus.INTERRUPTED
    assert text(session, caught.value.result.stderr).endswith("KeyboardInterrupt\n")
    assert text(session, run(session, "m").stdout) == "5\n"
