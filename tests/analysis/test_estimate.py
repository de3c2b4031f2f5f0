"""The static resource estimator: bounds from constants, never by running or folding huge values."""

from __future__ import annotations

import math
import textwrap

import pytest

from safeexec.analysis.estimate import estimate
from safeexec.model.values import Action, BoundKind, Estimate
from safeexec.parse import Parsed, parse


def _estimate(code: str, **kwargs: object) -> Estimate:
    parsed = parse(Action.create(textwrap.dedent(code)))
    assert isinstance(parsed, Parsed), parsed
    return estimate(parsed, **kwargs)  # type: ignore[arg-type]


def test_nested_constant_loops_multiply() -> None:
    cpu = _estimate("for i in range(1000):\n    for j in range(10, 2010, 2):\n        x = i").cpu
    assert cpu.kind is BoundKind.KNOWN
    assert cpu.value is not None and 1_000_000 <= cpu.value < 10_000_000


def test_names_bound_to_constants_feed_trip_counts() -> None:
    cpu = _estimate("n = 10**4\nfor i in range(n * n):\n    pass").cpu
    assert cpu.kind is BoundKind.KNOWN and cpu.value is not None and cpu.value >= 1e8


def test_comprehensions_and_consumers_count_their_iterations() -> None:
    cpu = _estimate("total = sum(a * b for a in range(1000) for b in range(1000))").cpu
    assert cpu.value is not None and cpu.value >= 1e6
    assert (_estimate("s = sum(range(10**9))").cpu.value or 0) >= 1e9


def test_while_true_without_exit_is_unbounded_and_with_break_is_unknown() -> None:
    endless = _estimate("while True:\n    x = 1").cpu
    assert endless.kind is BoundKind.UNBOUNDED and "line 1" in endless.reason
    exits = _estimate("while True:\n    if x:\n        break").cpu
    assert exits.kind is BoundKind.UNKNOWN
    dead_break = _estimate("while 1:\n    if False:\n        break").cpu
    assert dead_break.kind is BoundKind.UNBOUNDED


def test_a_break_in_a_nested_loop_does_not_end_the_outer_one() -> None:
    cpu = _estimate("while True:\n    for i in range(3):\n        break").cpu
    assert cpu.kind is BoundKind.UNBOUNDED


def test_recursion_is_unknown_and_unconditional_recursion_unbounded() -> None:
    assert _estimate("def f(n):\n    return f(n)\nf(1)").cpu.kind is BoundKind.UNBOUNDED
    fib = "def f(n):\n    if n < 2:\n        return n\n    return f(n-1) + f(n-2)\nf(10)"
    assert _estimate(fib).cpu.kind is BoundKind.UNKNOWN
    mutual = "def a(n):\n    return b(n)\ndef b(n):\n    return a(n)\na(1)"
    assert _estimate(mutual).cpu.kind is BoundKind.UNBOUNDED


def test_uncalled_functions_and_methods_are_still_counted_once() -> None:
    assert _estimate("def f():\n    while True:\n        pass").cpu.kind is BoundKind.UNBOUNDED
    method = "class A:\n    def run(self):\n        while True:\n            pass"
    assert _estimate(method).cpu.kind is BoundKind.UNBOUNDED


def test_function_costs_multiply_at_call_sites_in_loops() -> None:
    code = "def work():\n    for i in range(1000):\n        pass\nfor k in range(1000):\n    work()"
    assert (_estimate(code).cpu.value or 0) >= 1e6


def test_unknown_iterables_make_cpu_unknown_with_a_reason() -> None:
    cpu = _estimate("for x in data:\n    print(x)").cpu
    assert cpu.kind is BoundKind.UNKNOWN and "iterable" in cpu.reason


def test_endless_iterators_are_unbounded() -> None:
    assert _estimate("import itertools\nfor i in itertools.count():\n    pass").cpu.kind is (
        BoundKind.UNBOUNDED
    )


@pytest.mark.parametrize(
    ("code", "at_least"),
    [
        ("x = [0] * 10**9", 8e9),
        ("x = 10**9 * [0, 0]", 16e9),
        ("x = 'ab' * 10**9", 2e9),
        ("x = bytearray(10**10)", 1e10),
        ("x = 2 ** 10 ** 10", 1.25e9),
        ("n = 10**12\nx = 10 ** n", 4e11),
        ("import math\nmath.factorial(10**8)", 1e8),
        ("x = 1 << 10**11", 1.25e10),
        ("a = []\nfor i in range(10**9):\n    a.append(i)", 8e9),
        ("s = ''\nfor i in range(10**9):\n    s += 'xy'", 2e9),
        ("x = list(range(10**9))", 8e9),
        ("x = [i for i in range(10**9)]", 8e9),
    ],
)
def test_memory_bounds_from_constants(code: str, at_least: float) -> None:
    memory = _estimate(code).memory
    assert memory.kind is BoundKind.KNOWN
    assert memory.value is not None and memory.value >= at_least, memory


def test_towers_of_powers_are_sized_by_logarithms_and_capped() -> None:
    memory = _estimate("x = 2 ** 10 ** 10 ** 10 ** 10").memory
    assert memory.value is not None and math.isfinite(memory.value) and memory.value >= 1e100


def test_output_counts_prints_in_loops() -> None:
    output = _estimate("for i in range(1000):\n    print('hello')").output
    assert output.kind is BoundKind.KNOWN and output.value == 6000


def test_tool_calls_count_named_tools_only() -> None:
    code = "for i in range(7):\n    search(q=i)\nother()"
    assert _estimate(code, tool_names=("search",)).tool_calls.value == 7
    assert _estimate(code).tool_calls.value == 0


def test_ordinary_code_has_small_bounds() -> None:
    bounds = _estimate(
        """
        import json
        rows = [{"n": i, "sq": i * i} for i in range(100)]
        print(json.dumps(rows[:3]))
        """
    )
    assert bounds.memory.value is not None and bounds.memory.value < 1e6
    assert bounds.cpu.value is not None and bounds.cpu.value < 1e5


def test_bounds_are_json_numbers() -> None:
    bounds = _estimate("x = 2 ** 10 ** 10 ** 10\nfor i in range(10**400):\n    pass")
    assert Estimate.from_json(bounds.to_json()) == bounds


def test_an_estimator_crash_propagates_instead_of_becoming_a_bound() -> None:
    parsed = parse(Action.create("x = 1"))
    assert isinstance(parsed, Parsed)
    parsed.tree.body[0] = None  # type: ignore[call-overload]
    with pytest.raises(AttributeError):
        estimate(parsed)


def test_numpy_constructors_with_constant_shapes_are_sized_through_aliases() -> None:
    memory = _estimate("import numpy as np\ngrid = np.zeros((10**5, 10**5))").memory
    assert memory.value == 8e10 and "numpy.zeros" in memory.reason
    assert _estimate("from numpy import arange\narange(10**9)").memory.value == 8e9
    assert _estimate("import numpy as np\nnp.zeros(n)").memory.value == 0


def test_deep_static_call_chains_are_unknown_not_a_crash() -> None:
    chain = "\n".join(f"def f{i}():\n    return f{i + 1}()" for i in range(300))
    cpu = _estimate(chain + "\ndef f300():\n    return 1\nf0()").cpu
    assert cpu.kind is BoundKind.UNKNOWN and "too deep" in cpu.reason


def test_mutual_recursion_that_branches_anywhere_in_the_cycle_is_only_unknown() -> None:
    code = (
        "def f(n):\n    return g(n)\n"
        "def g(n):\n    if n == 0:\n        return 0\n    return f(n - 1)\n"
        "f(3)"
    )
    assert _estimate(code).cpu.kind is BoundKind.UNKNOWN


def test_a_loop_ended_by_a_handled_exception_is_not_endless() -> None:
    code = "items = [1]\ntry:\n    while True:\n        items.pop()\nexcept IndexError:\n    pass"
    assert _estimate(code).cpu.kind is BoundKind.UNKNOWN
    spin = "try:\n    while True:\n        x = 1\nexcept Exception:\n    pass"
    assert _estimate(spin).cpu.kind is BoundKind.UNBOUNDED
    in_function = (
        "def spin():\n    while True:\n        pass\ntry:\n    spin()\nexcept Exception:\n    pass"
    )
    assert _estimate(in_function).cpu.kind is BoundKind.UNBOUNDED


def test_a_function_rebinding_its_own_name_is_not_recursion() -> None:
    code = "def pager(t):\n    global pager\n    pager = print\n    pager(t)\npager('x')"
    assert _estimate(code).cpu.kind is not BoundKind.UNBOUNDED


def test_a_constant_slice_bounds_the_loop_over_it() -> None:
    def cpu(code: str) -> BoundKind:
        parsed = parse(Action.create(code))
        assert isinstance(parsed, Parsed)
        return estimate(parsed).cpu.kind

    assert cpu("for h in get()[:3]:\n    print(h)\n") is BoundKind.KNOWN
    assert cpu("for h in get()[-2:]:\n    print(h)\n") is BoundKind.KNOWN
    assert cpu("for h in get()[1:]:\n    print(h)\n") is BoundKind.UNKNOWN
    assert cpu("for h in get()[:n]:\n    print(h)\n") is BoundKind.UNKNOWN
