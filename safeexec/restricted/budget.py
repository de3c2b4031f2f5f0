"""The operation budget of in-process runs and the counting wrappers for C-level consumers
(long ranges, endless ``itertools`` producers)."""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, compress, repeat
from typing import TYPE_CHECKING, Any

from safeexec.restricted.guards import RuntimeClass

if TYPE_CHECKING:
    from safeexec.restricted.cell import Cell
    from safeexec.restricted.executor import RestrictedExecutor

# A budget's ticks come in chunks: a chunk is an iteration over ``_ONES``, so a tick hands out
# the cached small int 1 and allocates nothing (a range iterator's tick made an int per tick:
# a third of a tick's cost). ``_FULL_CHUNKS`` hands ``_ONES`` out to every budget's chain.
_CHUNK = 1024
_ONES = b"\x01" * _CHUNK
_FULL_CHUNKS = repeat(_ONES)


class OperationBudget(metaclass=RuntimeClass):
    """Counts loop iterations, comprehension steps and calls; exhausted by count or by ``stop``.

    The tick is a C-level ``next`` on :attr:`counter`, so counting costs one builtin call; a
    watchdog thread ends the run by exhausting the counter (``stop``), after which every loop
    head and function entry raises ``StopIteration``.

    The counter is C iterators only (no Python code runs in a tick, so a tick never releases
    the GIL and never meets the recursion limit): a ``chain`` of chunks, the full ones handed
    out by a ``compress`` once per item of a countdown, then the last 1 to ``_CHUNK`` ticks
    (the tail), which alone says whether the budget is spent.
    """

    __slots__ = (
        "_chunks",
        "_counter",
        "_tail",
        "deadline",
        "deadline_reason",
        "max_operations",
        "stopped_by",
    )

    def __init__(
        self,
        max_operations: int,
        *,
        deadline: float | None = None,
        deadline_reason: str = "wall_seconds",
    ) -> None:
        self.max_operations = max_operations
        full, last = divmod(max_operations - 1, _CHUNK) if max_operations > 0 else (0, -1)
        self._tail = tail = iter(_ONES)
        tail.__setstate__(_CHUNK - 1 - last)  # type: ignore[attr-defined]
        # Counts down to 1: every item is true, so ``compress`` hands out a chunk for each.
        self._chunks = chunks = iter(range(full, 0, -1))
        # One chain level between a tick and its chunk: the chunks, then the tail, come from
        # the chain's source, which only a chunk's end touches.
        self._counter: Iterator[int] = chain.from_iterable(
            chain(compress(_FULL_CHUNKS, chunks), (tail,))
        )
        self.stopped_by: str | None = None
        # When the run must end (``time.monotonic()``) and which limit that is: single C calls
        # that can take a time limit (the timed ``re``) are given what is left.
        self.deadline = deadline
        self.deadline_reason = deadline_reason

    @property
    def counter(self) -> Iterator[int]:
        return self._counter

    def stop(self, reason: str) -> None:
        """Exhaust the budget now; ``reason`` names the limit (first reason wins)."""
        if self.stopped_by is None:
            self.stopped_by = reason
        # No chunk is handed out after these two, so draining the counter draws what is left
        # of the chunk in use (at most ``_CHUNK`` ticks, at C speed and holding the GIL).
        self._chunks.__setstate__(self.max_operations)  # type: ignore[attr-defined]
        self._tail.__setstate__(_CHUNK)  # type: ignore[attr-defined]
        deque(self._counter, maxlen=0)

    @property
    def exhausted(self) -> bool:
        if self.stopped_by is not None:
            return True
        return self._tail.__length_hint__() == 0  # type: ignore[attr-defined]

    def reason(self) -> str | None:
        """Which limit ended the run: ``operations``, a watchdog reason, or ``None``."""
        if self.stopped_by is not None:
            return self.stopped_by
        return "operations" if self.exhausted else None


def _closed_budget() -> OperationBudget:
    budget = OperationBudget(1)
    budget.stop("closed")
    return budget


# Above this many items a ``range`` is handed out as a :class:`_CountedRange` (counting only).
_COUNTED_RANGE_ABOVE = 1 << 20
_SECOND = operator.itemgetter(1)


def _counted(cell: Cell, source: Iterable[object]) -> Iterator[object]:
    """``source``'s items, one budget operation each, drawn at C speed.

    ``zip`` pulls the budget's counter before the source, so when the counter runs dry (the
    watchdog stopped the run) no item is lost and the consumer stops; an iterator carried into a
    later run picks up that run's budget.
    """
    iterator = iter(source)
    while True:
        budget = cell.budget
        # A ``for`` loop, not ``yield from``: resuming after a plain ``yield`` checks the eval
        # breaker, so the watchdog thread gets the GIL to stop the budget.
        for item in map(_SECOND, zip(budget.counter, iterator, strict=False)):  # noqa: UP028
            yield item
        if not budget.exhausted:
            return  # the source ended
        if budget is cell.budget:
            raise RuntimeError("the operation budget is exhausted")


class _CountedRange(metaclass=RuntimeClass):
    """A ``range`` too long for C-level consumers: iterating it draws from the budget.

    ``type()`` and ``__class__`` answer the sandbox's ``range`` for it and for real ranges, so
    code never holds the real class (whose instances C code iterates uncounted).
    """

    __slots__ = ("_executor", "_range")

    def __init__(self, value: range, executor: RestrictedExecutor) -> None:
        self._range = value
        self._executor = executor

    @property
    def start(self) -> int:
        return self._range.start

    @property
    def stop(self) -> int:
        return self._range.stop

    @property
    def step(self) -> int:
        return self._range.step

    def __iter__(self) -> Iterator[object]:
        return _counted(self._executor.cell, self._range)

    def __reversed__(self) -> Iterator[object]:
        return _counted(self._executor.cell, reversed(self._range))

    def __len__(self) -> int:
        return len(self._range)

    def __bool__(self) -> bool:
        return bool(self._range)

    def __getitem__(self, index: int | slice) -> int | range | _CountedRange:
        if isinstance(index, slice):
            return self._executor._range_value(self._range[index])
        return self._range[index]

    def __contains__(self, value: object) -> bool:
        if type(value) is int or type(value) is bool:
            return value in self._range  # arithmetic, not a scan
        return value in _counted(self._executor.cell, self._range)

    def count(self, value: object) -> int:
        if type(value) is int or type(value) is bool:
            return self._range.count(value)
        return operator.countOf(_counted(self._executor.cell, self._range), value)

    def index(self, value: object) -> int:
        if type(value) is int or type(value) is bool:
            return self._range.index(value)
        return operator.indexOf(_counted(self._executor.cell, self._range), value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _CountedRange):
            return self._range == other._range
        if isinstance(other, range):
            return self._range == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._range)

    def __repr__(self) -> str:
        return repr(self._range)

    def __reduce__(self) -> str | tuple[object, ...]:
        return (self._executor._range, (self.start, self.stop, self.step))


def _counted_producer(cell: Cell, producer: Callable[..., Any]) -> object:
    """An ``itertools`` producer that may be endless or combinatorial: its items count."""
    if not cell.counting:
        return producer

    def counted(*args: object, **kwargs: object) -> Iterator[object]:
        return _counted(cell, producer(*args, **kwargs))

    return counted
