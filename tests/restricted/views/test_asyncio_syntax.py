"""Async syntax in restricted code: compiled with the guards and budget ticks of sync code."""

from __future__ import annotations

import pytest

from safeexec.restricted import GuardError, OperationBudget, RestrictedExecutor
from safeexec.restricted.views import WorkerViews


def _drive(
    code: str, *, counting: bool = False, budget: OperationBudget | None = None
) -> str | None:
    """Run ``code`` (which binds ``coro``), drive ``coro`` by hand, return the cell's value."""
    executor = RestrictedExecutor(views=WorkerViews, count_operations=counting)
    driver = (
        "\ndef drive(c):\n    try:\n        while True:\n            c.send(None)\n"
        "    except StopIteration as stop:\n        return stop.value\ndrive(coro)\n"
    )
    return executor.execute(code + driver, filename="<test>", budget=budget)


def test_async_def_await_async_for_and_async_with_compile_and_run() -> None:
    code = """
class Resource:
    def __init__(self):
        self.log = []
    async def __aenter__(self):
        self.log.append('enter')
        return self
    async def __aexit__(self, *exc):
        self.log.append('exit')
class Count:
    def __init__(self, n):
        self.i, self.n = 0, n
    def __aiter__(self):
        return self
    async def __anext__(self):
        if self.i >= self.n:
            raise StopAsyncIteration
        self.i += 1
        return self.i
async def agen(n):
    for i in range(n):
        yield i * 10
async def main():
    r = Resource()
    async with r as held:
        items = [x async for x in Count(3)]
        async for y in agen(2):
            items.append(y)
    return items, r.log, held is r
coro = main()
"""
    assert _drive(code) == "([1, 2, 3, 0, 10], ['enter', 'exit'], True)"


def test_await_of_a_guarded_attribute_goes_through_the_guard() -> None:
    code = """
async def inner():
    return 1
async def main(obj):
    return await obj._secret
class Box:
    pass
coro = main(Box())
"""
    with pytest.raises(GuardError):
        _drive(code)


@pytest.mark.parametrize(
    "attribute", ["cr_frame", "cr_code", "cr_await", "cr_origin", "ag_frame", "ag_code", "ag_await"]
)
def test_coroutine_and_async_generator_internals_are_refused(attribute: str) -> None:
    code = f"""
async def c():
    pass
async def ag():
    yield 1
target = c() if {attribute!r}.startswith('cr') else ag()
try:
    target.{attribute}
finally:
    if {attribute!r}.startswith('cr'):
        target.close()
"""
    with pytest.raises(GuardError, match=attribute):
        RestrictedExecutor(views=WorkerViews).execute(code, filename="<test>")


@pytest.mark.parametrize("name", ["cr_frame", "ag_frame", "gi_frame", "cr_code"])
def test_getattr_of_coroutine_internals_is_refused(name: str) -> None:
    code = f"async def c():\n    pass\nx = c()\nx.close()\ngetattr(x, {name!r})\n"
    with pytest.raises(GuardError):
        RestrictedExecutor(views=WorkerViews).execute(code, filename="<test>")


def test_defining_await_on_an_own_class_is_refused() -> None:
    code = "class A:\n    def __await__(self):\n        yield\n"
    with pytest.raises(SyntaxError, match="__await__"):
        RestrictedExecutor(views=WorkerViews).execute(code, filename="<test>")


@pytest.mark.parametrize(
    "body",
    [
        # An endless ``async for`` over an endless async iterator.
        "class Forever:\n    def __aiter__(self):\n        return self\n"
        "    async def __anext__(self):\n        return 1\n"
        "async def main():\n    async for _ in Forever():\n        pass\n",
        # An endless await chain: each step is a call into an async function.
        "async def step(n):\n    return n + 1\n"
        "async def main():\n    n = 0\n    while True:\n        n = await step(n)\n",
    ],
)
def test_the_budget_stops_endless_async_code(body: str) -> None:
    budget = OperationBudget(10_000)
    with pytest.raises(RuntimeError):
        _drive(body + "coro = main()\n", counting=True, budget=budget)
    assert budget.exhausted


def test_async_function_entry_ticks() -> None:
    # The budget counts async function entries: 50 awaited calls need more than 50 operations.
    code = "async def one():\n    return 1\nasync def main():\n"
    code += "".join("    await one()\n" for _ in range(50)) + "coro = main()\n"
    with pytest.raises(RuntimeError):
        _drive(code, counting=True, budget=OperationBudget(30))
    assert _drive(code, counting=True, budget=OperationBudget(200)) is None
