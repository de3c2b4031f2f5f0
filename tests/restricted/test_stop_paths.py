"""The runtime's stop paths see every stop: no loop sits in a function whose ``try`` or ``with``
must catch one.

CPython 3.13 checks for asynchronous exceptions (the cell's ``ThreadStopped``) and signals at a
loop's back edge, and its exception table leaves that instruction outside the enclosing
``try``/``with`` (python/cpython#139622): a stop landing there skips the handler. So each
function below holds no loop; its loops run in functions it calls inside the block."""

from __future__ import annotations

import dis
from collections.abc import Callable

import pytest

from safeexec.restricted.cell_threads import CellThreads
from safeexec.restricted.views.async_loop import EventLoop

# Functions whose ``try``/``with`` must see a stop: the loop's run and its endings, and the
# cell's wait for its threads (whose ``finally`` stops them).
STOP_PATHS: dict[str, Callable[..., object]] = {
    "EventLoop.run_until_complete": EventLoop.run_until_complete,
    "EventLoop._cancel_all": EventLoop._cancel_all,
    "EventLoop._abandon_surely": EventLoop._abandon_surely,
    "EventLoop._abandon": EventLoop._abandon,
    "CellThreads.end_of_cell": CellThreads.end_of_cell,
}


def _back_edges(function: Callable[..., object]) -> list[int]:
    """The lines of ``function``'s loop back edges that check for interrupts (3.11 also has
    conditional ones; ``JUMP_BACKWARD_NO_INTERRUPT``, the compiler's own, checks nothing).
    Exception handlers sit after the function's own code (3.11+); a backward jump there is the
    way out of a handler (3.12 leaves a ``with`` so), not a loop."""
    code = dis.Bytecode(function)
    handlers = min(
        (entry.target for entry in code.exception_entries), default=len(code.codeobj.co_code)
    )
    return [
        instruction.positions.lineno or 0
        for instruction in code
        if "BACKWARD" in instruction.opname
        and not instruction.opname.endswith("NO_INTERRUPT")
        and instruction.offset < handlers
    ]


@pytest.mark.parametrize("name", sorted(STOP_PATHS))
def test_a_stop_path_holds_no_loop(name: str) -> None:
    assert _back_edges(STOP_PATHS[name]) == [], f"{name} loops at these lines"


def test_the_check_finds_a_loop_in_a_protected_block() -> None:
    def looping(items: list[int]) -> None:
        try:
            while items:
                items.pop()
        finally:
            items.clear()

    assert _back_edges(looping)
