"""Threads in restricted mode belong to their cell: none outlives it, a cell's time limit stops
them all (a thread that spins, one that waits forever, one that swallows every exception), and
the thread view hands out nothing of the host's threads or tracing hooks.

In the worker, a thread that will not stop keeps its cell from returning until the host's grace
kill ends the process; in-process, the closed budget ends it at its next loop step or call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory

IMPORTS = ("threading", "queue", "concurrent.futures", "time")


@pytest.mark.parametrize(
    "body",
    [
        "while True:\n        pass",
        "threading.Event().wait()",
        "threading.Lock().acquire(); lock = threading.Lock(); lock.acquire(); lock.acquire()",
        "queue.Queue().get()",
        "time.sleep(3600)",
        "c = threading.Condition(); c.acquire(); c.wait()",
    ],
    ids=["spin", "event", "lock", "queue", "sleep", "condition"],
)
def test_a_non_daemon_thread_that_never_ends_is_stopped_at_the_time_limit(
    restricted_box: BoxFactory, body: str
) -> None:
    box = restricted_box(imports=IMPORTS)
    code = f"import threading, queue, time\ndef forever():\n    {body}\n"
    code += "threading.Thread(target=forever).start()\nprint('started')"
    outcome = box.run(code, cpu_seconds=2.0, wall_seconds=2.0)
    assert outcome.status.value in ("timeout", "killed"), outcome.text
    box.assert_usable()
    assert box.run("import threading\nprint(threading.active_count())", wall_seconds=5).stdout == (
        "1\n"
    )


def test_a_daemon_thread_ends_with_its_cell(restricted_box: BoxFactory) -> None:
    box = restricted_box(imports=IMPORTS)
    code = (
        "import threading\nstarted = threading.Event()\n"
        "def spin():\n    started.set()\n    while True:\n        pass\n"
        "t = threading.Thread(target=spin, daemon=True)\nt.start()\nstarted.wait()\n"
    )
    outcome = box.run(code, cpu_seconds=5.0, wall_seconds=10.0)
    assert outcome.status.value == "ok", outcome.text
    later = box.run("print(t.is_alive(), threading.active_count())")
    assert later.stdout == "False 1\n", later.text


def test_a_thread_that_swallows_every_exception_is_still_bounded(
    restricted_box: BoxFactory,
) -> None:
    box = restricted_box(imports=IMPORTS)
    code = (
        "import threading, time\n"
        "def stubborn():\n    while True:\n        try:\n            time.sleep(0.01)\n"
        "        except BaseException:\n            pass\n"
        "threading.Thread(target=stubborn, daemon=True).start()\n"
    )
    outcome = box.run(code, cpu_seconds=2.0, wall_seconds=3.0)
    assert outcome.status.value in ("ok", "timeout", "killed"), outcome.text
    box.assert_usable()
    assert box.run("import threading\nprint(threading.active_count())").stdout == "1\n"


_HEAVY = "for _ in range(100000):\n    pass\n"
_SWALLOW = "class Swallow:\n    def __enter__(self):\n        return self\n"
_SWALLOW += "    def __exit__(self, *exc):\n        return True\n"


def _indent(text: str, spaces: int) -> str:
    return "".join(" " * spaces + line + "\n" for line in text.splitlines())


# Each loop spends nearly all its time inside the ``try`` (or ``with``), so the stop signal lands
# there: without the check every handler, ``finally`` and own ``__exit__`` makes first
# (``_caught_`` in the worker, the budget tick in-process), the thread would outlive its cell and
# the cell would end by the host's kill.
@pytest.mark.parametrize(
    "loop",
    [
        "try:\n" + _indent(_HEAVY, 4) + "except BaseException:\n    pass\n",
        "try:\n" + _indent(_HEAVY, 4) + "except:\n    pass\n",
        "try:\n" + _indent(_HEAVY, 4) + "except (ValueError, BaseException) as error:\n    pass\n",
        "try:\n" + _indent(_HEAVY, 4) + "except CAUGHT:\n    pass\n",
        "try:\n" + _indent(_HEAVY, 4) + "finally:\n    continue\n",
        "try:\n" + _indent(_HEAVY, 4) + "except BaseException:\n"
        "    try:\n        raise\n    except BaseException:\n        pass\n",
        "with Swallow():\n" + _indent(_HEAVY, 4),
        "with contextlib.suppress(BaseException):\n" + _indent(_HEAVY, 4),
        "with contextlib.ExitStack() as stack:\n    stack.push(lambda *exc: True)\n"
        + _indent(_HEAVY, 4),
    ],
    ids=[
        "except-base",
        "bare-except",
        "tuple",
        "alias",
        "finally-continue",
        "nested",
        "exit",
        "suppress",
        "exit-stack",
    ],
)
def test_a_stopped_thread_cannot_swallow_its_stop(restricted_box: BoxFactory, loop: str) -> None:
    box = restricted_box(imports=(*IMPORTS, "contextlib"))
    code = (
        "import contextlib, threading\nstarted = threading.Event()\nCAUGHT = BaseException\n"
        + _SWALLOW
        + "def stubborn():\n    started.set()\n    while True:\n"
        + _indent(loop, 8)
        + "t = threading.Thread(target=stubborn, daemon=True)\nt.start()\nstarted.wait()\n"
        "print('started')\n"
    )
    outcome = box.run(code, cpu_seconds=5.0, wall_seconds=10.0)
    assert (outcome.status.value, outcome.stdout) == ("ok", "started\n"), outcome.text
    later = box.run("print(t.is_alive(), threading.active_count())")
    assert later.stdout == "False 1\n", later.text


def test_a_cell_cannot_start_unbounded_threads(restricted_box: BoxFactory) -> None:
    box = restricted_box(imports=IMPORTS)
    code = (
        "import threading\nstop = threading.Event()\n"
        "threads = [threading.Thread(target=stop.wait, daemon=True) for _ in range(200)]\n"
        "try:\n    for t in threads:\n        t.start()\nfinally:\n    stop.set()\n"
    )
    # At most 64 at once here; in the worker the session's process limit may come first.
    box.assert_refused(code, "can't start new thread")
    box.assert_usable()


@pytest.mark.parametrize(
    ("code", "fragment"),
    [
        ("import threading\nthreading.settrace(print)", "settrace"),
        ("import threading\nthreading.setprofile(print)", "setprofile"),
        ("import threading\nthreading._shutdown()", "_shutdown"),
        ("import threading\nthreading.excepthook", "excepthook"),
        ("import concurrent.futures as f\nf.ProcessPoolExecutor()", "ProcessPoolExecutor"),
        ("from concurrent.futures import process", "process"),
        ("import threading\nthreading.current_thread()._state", "_state"),
        ("import threading\nthreading.Lock()._lock", "_lock"),
        ("import queue\nqueue.Queue()._queue.mutex", "_queue"),
        (
            "import threading\nclass T(threading.Thread):\n    def peek(self):\n"
            "        return self._state\nT().peek()",
            "_state",
        ),
    ],
)
def test_the_thread_views_hand_out_no_host_thread_or_hook(
    restricted_box: BoxFactory, code: str, fragment: str
) -> None:
    box = restricted_box(imports=IMPORTS)
    box.assert_refused(code, fragment)
    box.assert_usable()


def test_only_the_cells_own_threads_are_listed(restricted_box: BoxFactory) -> None:
    box = restricted_box(imports=IMPORTS)
    code = (
        "import threading\nmain = threading.main_thread()\n"
        "print([t.name for t in threading.enumerate()], main.is_alive(), main.ident)\n"
        "main.run()\n"
    )
    outcome = box.run(code)
    assert outcome.stdout == "['MainThread'] False None\n", outcome.text
