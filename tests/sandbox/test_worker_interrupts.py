"""The worker's SIGINT latch: KeyboardInterrupt in the cell, held over a tool call, else dropped."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from safeexec.sandbox.worker import _Interrupts


@pytest.fixture
def interrupts() -> Iterator[_Interrupts]:
    previous = signal.getsignal(signal.SIGINT)
    latch = _Interrupts()
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
