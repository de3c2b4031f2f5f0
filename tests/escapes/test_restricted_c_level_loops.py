"""C-level loops: ``sum(range(10**12))`` runs no Python code between items, so no tick stops it.

In the worker, SIGKILL ends it. In the in-process variant the host itself would spin until the
loop ended; there, what C code consumes (a long ``range``, endless or combinatorial
``itertools`` producers, ``iter(callable, sentinel)``) draws one operation per item from the
budget, so the watchdog's deadline stops the consumer too. ``type(range(1))`` answers the
sandbox's ``range``, so the real class is not a way around it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory


@pytest.mark.parametrize(
    "code",
    [
        "n = 10 ** 12\nsum(range(n))",
        "n = 10 ** 12\nmax(reversed(range(n)))",
        "n = 10 ** 12\n-1.5 in range(n)",
        "n = 10 ** 12\nsum(type(range(1))(n))",
        "n = 10 ** 12\nsum(range(3).__class__(n))",
        "n = 10 ** 12\nsum(range(n)[::2])",
        "import itertools\n1 in itertools.count(2)",
        "import itertools\nsum(itertools.repeat(1))",
        "import itertools\nany(x == 'z' for x in itertools.cycle('ab'))",
        "import collections, itertools\n"
        "collections.deque(itertools.product(range(100), repeat=8), maxlen=0)",
        "sum(iter(int, 1))",
    ],
)
def test_a_c_level_loop_stops_at_the_deadline(restricted_box: BoxFactory, code: str) -> None:
    box = restricted_box(imports=("itertools", "collections"))
    outcome = box.run(code, cpu_seconds=0.5, wall_seconds=3.0)
    assert outcome.status.value == "timeout", outcome.text
    box.assert_usable()


def test_the_class_of_a_counted_producer_is_not_the_real_one(restricted_box: BoxFactory) -> None:
    box = restricted_box(imports=("itertools",))
    outcome = box.run(
        "import itertools\nsum(type(itertools.repeat(0, 1))(1))", cpu_seconds=0.5, wall_seconds=3.0
    )
    # In the worker the real class is there and the kill ends it; in-process the code only ever
    # holds the counting generator, whose class cannot be called.
    assert outcome.status.value == "timeout" or "cannot create" in outcome.text, outcome.text
    box.assert_usable()


def test_ranges_and_producers_behave_as_usual(restricted_box: BoxFactory) -> None:
    box = restricted_box(imports=("itertools",))
    code = """
import itertools
big = range(10 ** 12)
print(len(big), big[5], big[-1], 10 ** 11 in big, big.index(7), big.count(3), bool(big))
print(type(big) is range, type(range(3)) is range, big == range(10 ** 12), repr(big[2:5]))
print(list(big[:3]), list(reversed(range(2 ** 21)))[:2], sum(range(2 ** 21)))
it = iter(big)
print(next(it), next(it), list(itertools.islice(itertools.count(5), 3)))
print(list(itertools.repeat('x', 2)), len(list(itertools.product('ab', repeat=3))))
print(list(iter([1, 2, 3].pop, 1)))
"""
    outcome = box.run(code)
    assert outcome.stdout.splitlines() == [
        "1000000000000 5 999999999999 True 7 1 True",
        "True True True range(2, 5)",
        "[0, 1, 2] [2097151, 2097150] 2199022206976",
        "0 1 [5, 6, 7]",
        "['x', 'x'] 8",
        "[3, 2]",
    ], outcome.text


def test_an_iterator_over_a_long_range_carries_into_the_next_cell(
    restricted_box: BoxFactory,
) -> None:
    box = restricted_box()
    first = box.run("it = iter(range(10 ** 12))\nprint(next(it))")
    second = box.run("print(next(it), next(it))")
    assert (first.stdout, second.stdout) == ("0\n", "1 2\n"), first.text + second.text
