"""The worker's SIGINT latch: KeyboardInterrupt in the cell, held while its request arrives and
over a tool call, dropped between cells."""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Iterator

import pytest

from safeexec.sandbox.worker import _Interrupts


@pytest.fixture
def channel() -> Iterator[tuple[socket.socket, socket.socket]]:
    """(worker's end, host's end)."""
    worker_end, host_end = socket.socketpair()
    yield worker_end, host_end
    worker_end.close()
    host_end.close()


@pytest.fixture
def interrupts(channel: tuple[socket.socket, socket.socket]) -> Iterator[_Interrupts]:
    previous = signal.getsignal(signal.SIGINT)
    latch = _Interrupts(channel[0])
    latch.install()
    yield latch
    signal.signal(signal.SIGINT, previous)


def _sigint() -> None:
    os.kill(os.getpid(), signal.SIGINT)  # handlers run in the main thread, at once


def test_an_interrupt_in_the_cell_is_a_keyboard_interrupt(interrupts: _Interrupts) -> None:
    with pytest.raises(KeyboardInterrupt), interrupts.armed():
        _sigint()


def test_an_interrupt_outside_a_cell_is_dropped(interrupts: _Interrupts) -> None:
    _sigint()  # meant for a cell that already ended: the next cell must not see it
    with interrupts.armed():
        pass


def test_an_interrupt_during_a_tool_call_waits_for_its_reply(interrupts: _Interrupts) -> None:
    reached: list[str] = []
    with pytest.raises(KeyboardInterrupt), interrupts.armed():
        with interrupts.deferred():
            _sigint()
            reached.append("reply read")
        reached.append("after the call")
    assert reached == ["reply read"]


def test_nested_deferred_sections_raise_only_at_the_outermost(interrupts: _Interrupts) -> None:
    reached: list[str] = []
    with pytest.raises(KeyboardInterrupt), interrupts.armed(), interrupts.deferred():
        with interrupts.deferred():
            _sigint()
        reached.append("outer still running")
    assert reached == ["outer still running"]


def test_an_interrupt_sent_after_a_request_that_is_not_read_yet_reaches_that_cell(
    interrupts: _Interrupts, channel: tuple[socket.socket, socket.socket]
) -> None:
    worker_end, host_end = channel
    host_end.sendall(b"request")
    _sigint()  # the worker is still waiting: the request is in the channel, unread
    interrupts.wait_for_request()
    reached: list[str] = []
    with pytest.raises(KeyboardInterrupt), interrupts.cell():
        worker_end.recv(64)
        with interrupts.armed():
            reached.append("the cell's code ran")
    assert reached == []


def test_an_interrupt_while_the_cell_is_prepared_is_raised_as_its_code_starts(
    interrupts: _Interrupts,
) -> None:
    with pytest.raises(KeyboardInterrupt), interrupts.cell():
        _sigint()  # the request is read, the code not started yet
        with interrupts.armed():
            pytest.fail("the held interrupt must be raised before the code runs")


def test_an_interrupt_held_for_a_cell_does_not_outlive_it(
    interrupts: _Interrupts, channel: tuple[socket.socket, socket.socket]
) -> None:
    with interrupts.cell():
        pass
    with interrupts.cell():
        _sigint()  # after the code finished, before the answer went out
    channel[1].sendall(b"next request")
    with interrupts.cell(), interrupts.armed():
        pass
