"""The asyncio view: from a coroutine, task, future, handle, loop, exception traceback,
``__await__`` or async generator, no frame, real loop, module or host object is reachable;
``asyncio.run`` takes only coroutines; the time limit and the budget end endless async code."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory

_SETUP = """
import asyncio
async def child():
    await asyncio.sleep(1)
    return 1
async def failing():
    raise ValueError('x')
async def agen():
    await asyncio.sleep(0)
    yield 1
"""


def _in_main(body: str) -> str:
    lines = "".join(f"    {line}\n" for line in body.splitlines())
    return f"{_SETUP}async def main():\n{lines}asyncio.run(main())\n"


@pytest.mark.parametrize(
    "body",
    [
        # Coroutine internals, suspended or not.
        "c = child()\nc.send(None)\nprint(c.cr_frame)",
        "c = child()\nc.send(None)\nprint(c.cr_await)",
        "c = child()\nprint(getattr(c, 'cr_code'))",
        # A task and what it holds.
        "t = asyncio.create_task(child())\nprint(t._coro)",
        "t = asyncio.create_task(child())\nprint(t.get_coro().cr_frame)",
        "t = asyncio.create_task(child())\nprint(t._loop)",
        "t = asyncio.create_task(child())\nprint(t.get_stack())",
        "t = asyncio.create_task(child())\nprint(t.__dict__)",
        "t = asyncio.create_task(child())\nprint(vars(t))",
        "t = asyncio.create_task(child())\nprint(getattr(t, '_callbacks'))",
        # A future, its ``__await__`` iterator, its loop.
        "f = asyncio.get_running_loop().create_future()\nprint(f.__await__())",
        "f = asyncio.get_running_loop().create_future()\nprint(type(f).__await__)",
        "f = asyncio.get_running_loop().create_future()\nprint(f.get_loop()._state)",
        "print(asyncio.get_running_loop()._ready)",
        "print(asyncio.get_running_loop()._state.executor)",
        "h = asyncio.get_running_loop().call_soon(len, 'x')\nprint(h._callback)",
        # A failed task's exception and its traceback.
        "t = asyncio.create_task(failing())\nawait asyncio.sleep(0)\n"
        "print(t.exception().__traceback__)",
        "try:\n    await failing()\nexcept ValueError as e:\n    print(e.__traceback__.tb_frame)",
        "r = await asyncio.gather(failing(), return_exceptions=True)\nprint(r[0].__traceback__)",
        # Driving the view's own coroutines by hand hands out only the view's objects.
        "c = asyncio.sleep(1)\nw = c.send(None)\nprint(w._loop)",
        "c = asyncio.sleep(1)\nc.send(None)\nprint(c.cr_frame.f_globals)",
        # Async generator frames.
        "g = agen()\nprint(g.ag_frame)",
        "g = agen()\nawait g.asend(None)\nprint(g.ag_await)",
        # The module itself: no submodules, no sys, no real loop.
        "print(asyncio.events)",
        "print(asyncio.sys)",
        "print(asyncio.base_events.sys)",
        "print(asyncio.subprocess)",
        "print(asyncio.get_running_loop().run_in_executor(object(), print))",
        "print(asyncio.Future.set_result.__globals__)",
    ],
)
def test_no_frame_loop_or_module_is_reachable(restricted_box: BoxFactory, body: str) -> None:
    box = restricted_box()
    outcome = box.run(_in_main(body))
    assert outcome.status.value == "error", outcome.text
    assert outcome.stdout == "", outcome.text  # every attempt fails before it prints
    box.assert_usable()


@pytest.mark.parametrize(
    "value",
    [
        "(x for x in [1])",  # a generator: its frame would drive the loop
        "main",  # a coroutine function, not a coroutine
        "asyncio.get_event_loop().create_future()",
        "type('C', (), {})",
    ],
)
def test_run_takes_only_coroutines(restricted_box: BoxFactory, value: str) -> None:
    box = restricted_box()
    outcome = box.run(f"{_SETUP}async def main():\n    pass\nasyncio.run({value})\n")
    assert outcome.status.value == "error", outcome.text
    box.assert_usable()


@pytest.mark.parametrize(
    "code",
    [
        # The view's classes cannot be subclassed: the loop trusts their methods.
        "class F(asyncio.Future):\n    pass\n",
        "class T(asyncio.Task):\n    pass\n",
        "class Q(asyncio.Queue):\n    def _put(self, item):\n        pass\n",
        # A class-level method takes only the view's own objects.
        "asyncio.Queue.put_nowait([], 1)\n",
        "asyncio.Future.set_result(object(), 1)\n",
        # A loop of another kind is refused.
        "asyncio.Task(child(), loop=object())\n",
        "asyncio.set_event_loop(object())\n",
        # Neither copied nor pickled.
        "import copy\nasync def main():\n    copy.deepcopy(asyncio.get_running_loop())\n"
        "asyncio.run(main())\n",
    ],
)
def test_the_views_objects_cannot_be_forged_or_copied(
    restricted_box: BoxFactory, code: str
) -> None:
    box = restricted_box(imports=("asyncio", "copy"))
    outcome = box.run(_SETUP + code)
    assert outcome.status.value == "error", outcome.text
    box.assert_usable()


def test_values_sent_into_the_views_coroutines_forge_nothing(restricted_box: BoxFactory) -> None:
    # Code can drive the view's coroutines by hand; what it sends in is never taken as a result.
    box = restricted_box()
    code = _in_main(
        "c = asyncio.sleep(1, 'real')\nw = c.send(None)\n"
        "try:\n    c.send('forged')\nexcept RuntimeError as e:\n    print('refused:', e)\n"
        "print(type(w).__name__, w.done())"
    )
    outcome = box.run(code)
    assert outcome.stdout == "refused: await wasn't used with future\nFuture False\n", outcome.text


@pytest.mark.parametrize(
    "body",
    [
        "while True:\n    await asyncio.sleep(3600)",
        "while True:\n    await asyncio.sleep(0)",
        "async def again():\n    await asyncio.sleep(1)\n    asyncio.create_task(again())\n"
        "asyncio.create_task(again())\nawait asyncio.Event().wait()",
        "while True:\n    try:\n        await asyncio.sleep(1)\n    except BaseException:\n"
        "        pass",
    ],
)
def test_endless_async_code_is_stopped(restricted_box: BoxFactory, body: str) -> None:
    box = restricted_box()
    outcome = box.run(_in_main(body), cpu_seconds=2.0, wall_seconds=3.0)
    assert outcome.status.value in ("timeout", "killed", "limit_exceeded", "error"), outcome.text
    assert outcome.status.value != "ok"
    box.assert_usable()


def test_an_async_generator_left_open_leaves_the_session_usable(
    restricted_box: BoxFactory,
) -> None:
    # The loop installs its own async-generator hooks while it runs and closes what is left
    # open at its end (test_asyncio_patterns.py checks the host's hooks come back).
    box = restricted_box()
    code = _in_main("g = agen()\nawait g.asend(None)\nprint('left open')")
    assert box.run(code).stdout == "left open\n"
    box.assert_usable()


def test_a_loop_in_a_thread_stops_with_its_cell(restricted_box: BoxFactory) -> None:
    # The thread's stop signal ends the loop instead of becoming a task's exception, even when
    # the task catches everything.
    box = restricted_box(imports=("asyncio", "threading"))
    code = (
        "import asyncio, threading\n"
        "started = threading.Event()\n"
        "async def stubborn():\n    started.set()\n    while True:\n        try:\n"
        "            await asyncio.sleep(0)\n        except BaseException:\n            pass\n"
        "t = threading.Thread(target=lambda: asyncio.run(stubborn()), daemon=True)\n"
        "t.start()\nstarted.wait()\nprint('started')\n"
    )
    outcome = box.run(code, cpu_seconds=5.0, wall_seconds=10.0)
    assert outcome.status.value == "ok" and outcome.stdout == "started\n", outcome.text
    later = box.run("print(t.is_alive(), threading.active_count())")
    assert later.stdout == "False 1\n", later.text
