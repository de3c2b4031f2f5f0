"""The operation budget: exactly ``max_operations`` ticks, in chunks; ``stop`` (from any thread)
ends it at the next tick, wherever in a chunk the counter is."""

from __future__ import annotations

import threading

import pytest

from safeexec.restricted import OperationBudget, RestrictedExecutor
from safeexec.restricted.budget import _CHUNK

SIZES = [0, 1, 2, _CHUNK - 1, _CHUNK, _CHUNK + 1, 2 * _CHUNK, 3 * _CHUNK + 7]


def drain(budget: OperationBudget) -> int:
    drawn = 0
    for tick in budget.counter:
        assert tick  # lambdas tick as ``tick and body``
        drawn += 1
    return drawn


@pytest.mark.parametrize("operations", SIZES)
def test_a_budget_hands_out_exactly_its_operations(operations: int) -> None:
    budget = OperationBudget(operations)
    for _ in range(operations):
        assert not budget.exhausted and budget.reason() is None
        next(budget.counter)
    assert budget.exhausted and budget.reason() == "operations"
    assert next(budget.counter, None) is None
    assert drain(OperationBudget(operations)) == operations


@pytest.mark.parametrize(
    "drawn",
    [0, 1, _CHUNK - 1, _CHUNK, _CHUNK + 1, 2 * _CHUNK + 5],
    ids=["none", "one", "end-of-chunk", "chunk-boundary", "next-chunk", "inside"],
)
@pytest.mark.parametrize(
    "operations", [2 * _CHUNK + 9, 2**62], ids=["two-chunks-and-a-tail", "huge"]
)
def test_a_stop_ends_the_budget_at_the_next_tick(drawn: int, operations: int) -> None:
    budget = OperationBudget(operations)
    for _ in range(drawn):
        next(budget.counter)
    budget.stop("wall_seconds")
    budget.stop("cpu_seconds")  # the first reason wins
    assert next(budget.counter, None) is None
    assert next(budget.counter, None) is None
    assert budget.exhausted and budget.reason() == "wall_seconds"


def test_a_tick_hands_out_the_same_cached_object() -> None:
    # Nothing is allocated per tick: every tick is the small int 1.
    counter = OperationBudget(3 * _CHUNK).counter
    assert {id(next(counter)) for _ in range(3 * _CHUNK)} == {id(1)}


def test_threads_ticking_one_budget_draw_exactly_its_operations() -> None:
    operations = 50 * _CHUNK + 3
    budget = OperationBudget(operations)
    counts: list[int] = []
    threads = [threading.Thread(target=lambda: counts.append(drain(budget))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(counts) == operations and budget.reason() == "operations"


@pytest.mark.parametrize(
    "loop",
    [
        "while True:\n    pass",
        "def f():\n    return 1\nwhile True:\n    f()",
        "while True:\n    [i for i in range(3000)]",
    ],
    ids=["loop", "calls", "comprehensions"],
)
def test_a_stop_from_another_thread_ends_a_running_cell(loop: str) -> None:
    executor = RestrictedExecutor(count_operations=True)
    running = threading.Event()
    executor.bind_tools({"running": running.set})
    budget = OperationBudget(2**62)

    def stop_once_running() -> None:
        running.wait()
        budget.stop("interrupted")

    stopper = threading.Thread(target=stop_once_running)
    stopper.start()
    with pytest.raises(StopIteration):
        executor.execute(f"running()\n{loop}", filename="<t>", budget=budget)
    stopper.join()
    assert budget.reason() == "interrupted"
