"""The asyncio patterns models write, run on the restricted view's own loop (worker and
in-process executors): their results match what real asyncio gives."""

from __future__ import annotations

import sys

import pytest

from safeexec.restricted import OperationBudget, RestrictedExecutor
from safeexec.restricted.views import WorkerViews


@pytest.fixture(params=[False, True], ids=["worker", "in-process"])
def run(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    def execute(code: str, *, budget: OperationBudget | None = None) -> str | None:
        executor = RestrictedExecutor(
            views=WorkerViews, imports=("asyncio",), count_operations=request.param
        )
        return executor.execute("import asyncio\n" + code, filename="<test>", budget=budget)

    return execute


def test_run_gather_sleep(run) -> None:  # type: ignore[no-untyped-def]
    code = """
async def fetch(i):
    await asyncio.sleep(0.01 * (5 - i))
    return i * 10
async def main():
    return await asyncio.gather(*(fetch(i) for i in range(5)))
asyncio.run(main())
"""
    assert run(code) == "[0, 10, 20, 30, 40]"


def test_gather_return_exceptions_and_first_exception(run) -> None:  # type: ignore[no-untyped-def]
    code = """
async def ok():
    return 1
async def bad():
    raise ValueError('bad')
async def main():
    mixed = await asyncio.gather(ok(), bad(), return_exceptions=True)
    try:
        await asyncio.gather(ok(), bad())
    except ValueError as e:
        raised = str(e)
    return mixed[0], type(mixed[1]).__name__, raised, await asyncio.gather()
asyncio.run(main())
"""
    assert run(code) == "(1, 'ValueError', 'bad', [])"


def test_tasks_finish_in_virtual_time_order(run) -> None:  # type: ignore[no-untyped-def]
    code = """
order = []
async def job(name, delay):
    await asyncio.sleep(delay)
    order.append(name)
    return name
async def main():
    loop = asyncio.get_running_loop()
    start = loop.time()
    tasks = [asyncio.create_task(job(n, d)) for n, d in [('c', 3), ('a', 1), ('b', 2)]]
    for t in tasks:
        await t
    elapsed = loop.time() - start
    return order, [t.result() for t in tasks], all(t.done() for t in tasks), round(elapsed, 6)
asyncio.run(main())
"""
    assert run(code) == "(['a', 'b', 'c'], ['c', 'a', 'b'], True, 3.0)"


def test_wait_for_and_timeout_raise_timeout_error(run) -> None:  # type: ignore[no-untyped-def]
    code = """
async def slow():
    await asyncio.sleep(5)
    return 'done'
async def main():
    out = []
    try:
        await asyncio.wait_for(slow(), timeout=0.05)
    except asyncio.TimeoutError:
        out.append('wait_for timed out')
    try:
        async with asyncio.timeout(0.1):
            await slow()
    except TimeoutError:
        out.append('timeout block')
    out.append(await asyncio.wait_for(slow(), timeout=10))
    async with asyncio.timeout(None):
        out.append(await asyncio.sleep(0, 'no limit'))
    return out
asyncio.run(main())
"""
    assert run(code) == "['wait_for timed out', 'timeout block', 'done', 'no limit']"


def test_cancel_a_task(run) -> None:  # type: ignore[no-untyped-def]
    code = """
cleaned = []
async def forever():
    try:
        while True:
            await asyncio.sleep(1)
    finally:
        cleaned.append(True)
async def main():
    t = asyncio.create_task(forever())
    await asyncio.sleep(2.5)
    assert t.cancel()
    try:
        await t
    except asyncio.CancelledError:
        pass
    return t.cancelled(), t.done(), cleaned, t.cancel()
asyncio.run(main())
"""
    assert run(code) == "(True, True, [True], False)"


def test_wait_and_as_completed(run) -> None:  # type: ignore[no-untyped-def]
    code = """
async def job(n):
    await asyncio.sleep(n)
    return n
async def main():
    tasks = [asyncio.create_task(job(n)) for n in (3, 1, 2)]
    done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    first = [t.result() for t in done]
    done, pending = await asyncio.wait(tasks, timeout=1.5)
    partial = (len(done), len(pending))
    done, pending = await asyncio.wait(tasks)
    order = [await c for c in asyncio.as_completed([job(n) for n in (0.3, 0.1, 0.2)])]
    return first, partial, len(done), len(pending), order
asyncio.run(main())
"""
    assert run(code) == "([1], (2, 1), 3, 0, [0.1, 0.2, 0.3])"


def test_queue_producer_consumer(run) -> None:  # type: ignore[no-untyped-def]
    code = """
async def producer(q, n):
    for i in range(n):
        await q.put(i)
        await asyncio.sleep(0.01)
async def consumer(q, seen):
    while True:
        item = await q.get()
        seen.append(item)
        q.task_done()
async def main():
    q = asyncio.Queue(maxsize=2)
    seen = []
    workers = [asyncio.create_task(consumer(q, seen)) for _ in range(3)]
    await asyncio.gather(producer(q, 5), producer(q, 5))
    await q.join()
    for w in workers:
        w.cancel()
    await asyncio.gather(*workers, return_exceptions=True)
    try:
        q.get_nowait()
    except asyncio.QueueEmpty:
        empty = True
    return sorted(seen), q.empty(), empty
asyncio.run(main())
"""
    assert run(code) == "([0, 0, 1, 1, 2, 2, 3, 3, 4, 4], True, True)"


def test_lock_semaphore_event(run) -> None:  # type: ignore[no-untyped-def]
    code = """
async def main():
    lock = asyncio.Lock()
    sem = asyncio.Semaphore(2)
    ready = asyncio.Event()
    active, peak, log = [], [], []
    async def limited(i):
        async with sem:
            active.append(i)
            peak.append(len(active))
            await asyncio.sleep(0.01)
            active.remove(i)
    async def critical(i):
        async with lock:
            log.append(('in', i))
            await asyncio.sleep(0.01)
            log.append(('out', i))
    async def waiter():
        await ready.wait()
        return 'woken'
    w = asyncio.create_task(waiter())
    await asyncio.gather(*(limited(i) for i in range(6)), *(critical(i) for i in range(3)))
    ready.set()
    interleaved = any(log[k][0] == log[k + 1][0] for k in range(0, len(log) - 1, 2))
    return max(peak), interleaved, await w, lock.locked(), ready.is_set()
asyncio.run(main())
"""
    assert run(code) == "(2, False, 'woken', False, True)"


def test_task_group_and_to_thread(run) -> None:  # type: ignore[no-untyped-def]
    code = """
def blocking(x):
    return x * 2
async def work(x):
    await asyncio.sleep(x / 10)
    return await asyncio.to_thread(blocking, x)
async def main():
    async with asyncio.TaskGroup() as tg:
        tasks = [tg.create_task(work(x)) for x in range(4)]
    loop = asyncio.get_running_loop()
    direct = await loop.run_in_executor(None, blocking, 21)
    return [t.result() for t in tasks], direct
asyncio.run(main())
"""
    assert run(code) == "([0, 2, 4, 6], 42)"


def test_task_group_failure_cancels_the_rest(run) -> None:  # type: ignore[no-untyped-def]
    code = """
cancelled = []
async def slow():
    try:
        await asyncio.sleep(10)
    except asyncio.CancelledError:
        cancelled.append(True)
        raise
async def fail():
    await asyncio.sleep(0.1)
    raise KeyError('x')
async def main():
    try:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(slow())
            tg.create_task(fail())
    except BaseExceptionGroup as group:
        return [type(e).__name__ for e in group.exceptions], cancelled
asyncio.run(main())
"""
    assert run(code) == "(['KeyError'], [True])"


def test_get_event_loop_run_until_complete(run) -> None:  # type: ignore[no-untyped-def]
    code = """
async def main():
    await asyncio.sleep(0.1)
    return 'old style'
loop = asyncio.get_event_loop()
result = loop.run_until_complete(main())
new = asyncio.new_event_loop()
second = new.run_until_complete(asyncio.sleep(1, 'again'))
new.close()
result, second, new.is_closed()
"""
    assert run(code) == "('old style', 'again', True)"


def test_async_generators_and_async_comprehensions(run) -> None:  # type: ignore[no-untyped-def]
    code = """
async def ticker(n):
    for i in range(n):
        await asyncio.sleep(0)
        yield i
async def main():
    squares = [i * i async for i in ticker(4)]
    first = None
    async for i in ticker(10):
        first = i
        break
    return squares, first
asyncio.run(main())
"""
    assert run(code) == "([0, 1, 4, 9], 0)"


def test_shield_and_futures(run) -> None:  # type: ignore[no-untyped-def]
    code = """
async def main():
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    loop.call_later(0.5, fut.set_result, 'later')
    inner = asyncio.create_task(asyncio.sleep(1, 'inner'))
    outer = asyncio.shield(inner)
    outer.cancel()
    value = await fut
    return value, await inner, outer.cancelled(), asyncio.iscoroutine(main()) is True
asyncio.run(main())
"""
    assert run(code).startswith("('later', 'inner', True, True)")  # type: ignore[union-attr]


def test_a_deadlock_is_reported_instead_of_hanging(run) -> None:  # type: ignore[no-untyped-def]
    code = """
async def main():
    await asyncio.Event().wait()
asyncio.run(main())
"""
    with pytest.raises(RuntimeError, match="deadlock"):
        run(code)


def test_run_refuses_what_is_not_a_coroutine(run) -> None:  # type: ignore[no-untyped-def]
    for value in ("42", "(x for x in [1])", "main"):
        code = f"async def main():\n    pass\nasyncio.run({value})\n"
        with pytest.raises(ValueError, match="a coroutine was expected"):
            run(code)


def test_nested_run_is_refused(run) -> None:  # type: ignore[no-untyped-def]
    code = """
async def inner():
    return 1
async def main():
    c = inner()
    try:
        asyncio.run(c)
    finally:
        c.close()
asyncio.run(main())
"""
    with pytest.raises(RuntimeError, match="running event loop"):
        run(code)


def test_the_budget_stops_an_endless_sleep_chain() -> None:
    # Virtual time never blocks, so only the budget can end it; each callback draws from it.
    executor = RestrictedExecutor(views=WorkerViews, imports=("asyncio",), count_operations=True)
    budget = OperationBudget(5_000)
    code = "import asyncio\nasync def main():\n    while True:\n        await asyncio.sleep(3600)\n"
    with pytest.raises(RuntimeError):
        executor.execute(code + "asyncio.run(main())\n", filename="<test>", budget=budget)
    assert budget.exhausted


def test_the_loop_itself_draws_from_the_budget() -> None:
    # Callbacks the code schedules on the loop run no ticked code of their own (``print`` is a
    # builtin): only the loop's own draw stops them.
    executor = RestrictedExecutor(views=WorkerViews, imports=("asyncio",), count_operations=True)
    budget = OperationBudget(2_000)
    code = """
import asyncio
async def main():
    loop = asyncio.get_running_loop()
    f = loop.create_future()
    for _ in range(100):
        loop.call_soon(len, 'x')
    loop.call_later(10**9, f.set_result, 1)
    await f
asyncio.run(main())
"""
    assert executor.execute(code, filename="<test>", budget=OperationBudget(10**6)) is None
    with pytest.raises(RuntimeError, match="budget"):
        executor.execute(code.replace("range(100)", "range(1000)"), filename="<t>", budget=budget)


@pytest.mark.parametrize("keep", [False, True], ids=["finalized", "left-open"])
def test_open_async_generators_are_closed_and_the_hosts_hooks_restored(keep: bool) -> None:
    before = sys.get_asyncgen_hooks()
    executor = RestrictedExecutor(views=WorkerViews, imports=("asyncio",), count_operations=True)
    code = f"""
import asyncio
closed = []
kept = []
async def agen():
    try:
        yield 1
        yield 2
    finally:
        await asyncio.sleep(1)
        closed.append(True)
async def main():
    g = agen()
    if {keep}:
        kept.append(g)
    return await g.asend(None)
(asyncio.run(main()), closed)
"""
    assert executor.execute(code, filename="<test>") == "(1, [True])"
    assert sys.get_asyncgen_hooks() == before


def test_aiter_and_anext_builtins(run) -> None:  # type: ignore[no-untyped-def]
    code = """
async def agen():
    yield 'a'
    yield 'b'
async def main():
    it = aiter(agen())
    first = await anext(it)
    second = await anext(it)
    return first, second, await anext(it, 'end')
asyncio.run(main())
"""
    assert run(code) == "('a', 'b', 'end')"
