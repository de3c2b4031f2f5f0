"""The restricted runtime's fast paths: private reads off own instances, method calls on the
inline-checked path, reads off literals. Each gives what the full guard gives, refuses what it
refuses, and leaves the operation budget counting."""

from __future__ import annotations

import ast
import json
import types

import pytest

from safeexec.sandbox.restricted import GuardError, OperationBudget, RestrictedExecutor
from safeexec.sandbox.restricted.guards import Guards
from safeexec.sandbox.restricted.transformer import CountingTransformer


def run(code: str, *imports: str, counting: bool = False) -> str | None:
    executor = RestrictedExecutor(imports=imports, count_operations=counting)
    return executor.execute(code, filename="<test>")


def transformed(code: str) -> str:
    tree = ast.parse(code)
    errors: list[str] = []
    CountingTransformer(errors, [], {}).visit(tree)
    assert not errors
    return ast.unparse(ast.fix_missing_locations(tree))


# -- private reads off own instances ---------------------------------------------------------------
@pytest.mark.parametrize("counting", [False, True], ids=["worker", "in-process"])
def test_own_private_attributes_and_helpers_read_and_update(counting: bool) -> None:
    code = (
        "class C:\n    def __init__(self):\n        self._n = 0\n"
        "    def _step(self, k):\n        return k * 2\n"
        "    def add(self, k):\n        self._n += self._step(k)\n        return self._n\n"
        "c = C()\n[c.add(i) for i in range(4)], c._n, getattr(c, '_n')"
    )
    assert run(code, counting=counting) == "([0, 2, 6, 12], 12, 12)"


@pytest.mark.parametrize(
    "use",
    ["F(1, 2)._numerator", "F(1, 2).bump()", "getattr(F(1, 2), '_numerator')"],
    ids=["read", "augmented", "getattr"],
)
def test_a_private_name_inherited_from_a_library_class_stays_refused(use: str) -> None:
    code = (
        "import fractions\nclass F(fractions.Fraction):\n"
        f"    def bump(self):\n        self._numerator += 1\n{use}"
    )
    with pytest.raises(GuardError, match="_numerator"):
        run(code, "fractions")


def test_a_module_on_an_own_instance_is_refused_by_the_fast_read() -> None:
    guards = Guards()
    cls = guards.register_class(type("Own", (), {}))
    assert isinstance(cls, type)
    obj = cls()
    obj._module = types  # what no sandboxed code can reach; the guard refuses it anyway
    with pytest.raises(GuardError, match="module"):
        guards.read_guard(obj, "_module")
    with pytest.raises(GuardError, match="module"):
        guards.augmented_target(obj, "_module")


def test_an_own_super_subclass_instance_gets_the_full_guard() -> None:
    # A ``super`` subclass's instance is class-like: a host function read off it comes back
    # receiver-checked, which the fast read (plain values only) would skip.
    guards = Guards()
    cls = guards.register_class(type("OwnSuper", (super,), {}))
    assert isinstance(cls, type)
    obj = cls(int, 1)
    obj._dump = json.dumps
    assert guards.read_guard(obj, "_dump") is not json.dumps
    plain = guards.register_class(type("Own", (), {}))
    assert isinstance(plain, type)
    instance = plain()
    instance._dump = json.dumps
    assert guards.read_guard(instance, "_dump") is json.dumps


# -- method calls and literal receivers ------------------------------------------------------------
def test_a_method_call_on_a_name_runs_the_interpreter_s_method_call() -> None:
    code = transformed("parts.append(str(i) + ',')")
    assert code == (
        "parts.append(str(i) + ',') if _type_(parts) in _plain_ "
        "else _cattr_(parts, 'append')(str(i) + ',')"
    )


def test_method_calls_keep_their_results_and_order_of_evaluation() -> None:
    code = (
        "seen = []\ndef note(v):\n    seen.append(v)\n    return v\n"
        "d = {}\nd.update(a=note(1), b=note(2))\nitems = []\n"
        "items.extend([note(3), (w := note(4))])\n"
        "s = 'x,y'\n(seen, sorted(d.items()), items, w, s.split(note(',')), ''.join(['p', 'q']))"
    )
    expected = "([1, 2, 3, 4, ','], [('a', 1), ('b', 2)], [3, 4], 4, ['x', 'y'], 'pq')"
    assert run(code) == expected
    assert run(code, counting=True) == expected


def test_a_method_call_on_a_class_still_goes_through_the_class_check() -> None:
    code = "import collections\nC = collections.Counter\nC.copy({})"
    with pytest.raises(GuardError, match="takes an instance"):
        run(code, "collections")


def test_nested_method_calls_keep_the_code_size_linear() -> None:
    depth = 12
    code = "a.f(" * depth + "x" + ")" * depth
    # Doubling the arguments at every level would make 2**12 copies; only the innermost call
    # (whose arguments hold no other checked call) takes the method-call form.
    assert transformed(code).count("_cattr_") <= 2 * depth


def test_literal_receivers_read_plainly() -> None:
    assert "_cattr_" not in transformed("''.join(parts)\n[3, 1].copy()\nf'{x}'.upper()")
    assert run("', '.join(['a', 'b']), [3, 1].copy(), (1, 2).count(1)") == ("('a, b', [3, 1], 1)")


# -- the budget through the fast paths -------------------------------------------------------------
@pytest.mark.parametrize(
    "code",
    [
        "class C:\n    def go(self, n):\n        return self.go(n + 1)\n"
        "try:\n    C().go(0)\nexcept RecursionError:\n    pass\nwhile 1:\n    C().go",
        "class C:\n    def _go(self):\n        return self._go() + self._go()\n"
        "    def go(self):\n        try:\n            return self._go()\n"
        "        except RecursionError:\n            return self.go()\nC().go()",
        "items = []\nwhile True:\n    items.clear()",
        "class C:\n    def __init__(self):\n        self._n = 0\n"
        "    def bump(self):\n        self._n += 1\nc = C()\nwhile True:\n    c.bump()",
    ],
    ids=["recursion-then-loop", "exponential-private-recursion", "method-loop", "private-write"],
)
def test_the_budget_stops_code_that_only_runs_the_fast_paths(code: str) -> None:
    executor = RestrictedExecutor(count_operations=True)
    budget = OperationBudget(50_000)
    with pytest.raises(Exception):  # noqa: B017 - whatever the code last raised
        executor.execute(code, filename="<t>", budget=budget)
    assert budget.exhausted and budget.reason() == "operations"


def test_a_stopped_budget_ends_a_loop_of_method_calls() -> None:
    executor = RestrictedExecutor(count_operations=True)
    budget = OperationBudget(10**9)
    budget.stop("wall_seconds")
    with pytest.raises(StopIteration):
        executor.execute(
            "items = []\nwhile True:\n    items.append(1)", filename="<t>", budget=budget
        )
    assert budget.reason() == "wall_seconds"
