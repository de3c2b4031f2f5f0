"""The restricted runtime's fast paths: private reads off own instances, method calls on the
inline-checked path, reads off literals. Each gives what the full guard gives, refuses what it
refuses, and leaves the operation budget counting."""

from __future__ import annotations

import ast
import json
import re
import types

import pytest

from safeexec.restricted import GuardError, OperationBudget, RestrictedExecutor
from safeexec.restricted.guards import Guards
from safeexec.restricted.transformer import CountingTransformer


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

    # Each call's result passes ``_ret_`` (never a metaclass), inline where it can.
    def returned(call: str) -> str:
        return f"(_rv_ if _type_((_rv_ := {call})) in _pass_ else _ret_(_rv_))"

    # Off a builtin value or a simple own instance: the interpreter's method call; off another
    # instance: the bound method read and checked inline (``_got_``); else through ``_cattr_``.
    read = "(_rv_ if _type_((_rv_ := parts.append)) in _rpass_ else _got_(_rv_))"
    method = (
        f"parts.append({returned('str(i)')} + ',') if _type_(parts) in _plain_ "
        f"else ({read} if _type_(parts) in _vread_ else _cattr_(parts, 'append'))"
        f"({returned('str(i)')} + ',')"
    )
    assert code.splitlines()[-1] == returned(f"({method})")[1:-1]


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


# -- a method's receiver (``self.x`` tested once per call, ``_simple_self_``) --------------------
METHODS = (
    "    def read(self):\n        return self.{name}\n"
    "    def bump(self):\n        self.{name} += 1\n        return self.{name}\n"
)
# name: (the class, ``{methods}`` marking where ``read`` and ``bump`` go; the instance; the
# attribute; whether the class is one whose methods take the inline path)
RECEIVER_CASES: dict[str, tuple[str, str, str, bool]] = {
    "instance-attribute": (
        "class C:\n    def __init__(self):\n        self._x = 1\n{methods}",
        "C()",
        "_x",
        True,
    ),
    "own-method": ("class C:\n    def _x(self):\n        return 2\n{methods}", "C()", "_x", True),
    "inherited-from-an-own-base": (
        "class B:\n    _x = 3\nclass C(B):\n{methods}",
        "C()",
        "_x",
        True,
    ),
    "added-to-the-class-later": ("class C:\n{methods}C._x = 4\n", "C()", "_x", True),
    "deleted-from-the-instance": (
        "class C:\n    _x = 5\n    def __init__(self):\n        self._x = 6\n"
        "        del self._x\n{methods}",
        "C()",
        "_x",
        True,
    ),
    "never-defined": ("class C:\n{methods}", "C()", "_x", True),
    "name-mangled": (
        "class C:\n    def __init__(self):\n        self.__x = 7\n{methods}",
        "C()",
        "__x",
        True,
    ),
    "property": (
        "class C:\n    @property\n    def _x(self):\n        return 8\n{methods}",
        "C()",
        "_x",
        True,
    ),
    "property-raising-attribute-error": (
        "class C:\n    @property\n    def _x(self):\n        raise AttributeError('inside')\n"
        "{methods}",
        "C()",
        "_x",
        True,
    ),
    "slots-unset": ("class C:\n    __slots__ = ('_x',)\n{methods}", "C()", "_x", True),
    "slots-set": (
        "class C:\n    __slots__ = ('_x',)\n    def __init__(self):\n        self._x = 9\n"
        "{methods}",
        "C()",
        "_x",
        True,
    ),
    "inherited-from-a-library-base": (
        "import fractions\nclass C(fractions.Fraction):\n{methods}",
        "C(1, 2)",
        "_numerator",
        False,
    ),
    "subclass-of-a-library-class": (
        "class C(dict):\n    def __init__(self):\n        self._x = 10\n{methods}",
        "C()",
        "_x",
        False,
    ),
    "own-subclass-of-a-library-subclass": (
        "import fractions\nclass B(fractions.Fraction):\n    pass\nclass C(B):\n{methods}",
        "C(1, 2)",
        "_numerator",
        False,
    ),
}


def outcome(executor: RestrictedExecutor, code: str) -> tuple[str, str]:
    """What ``code`` gave or raised, addresses left out (each side has objects of its own)."""
    try:
        kind, text = "value", repr(executor.execute(code, filename="<t>"))
    except Exception as exc:
        kind, text = type(exc).__name__, str(exc)
    return kind, re.sub(r" at 0x[0-9a-f]+", " at 0x-", text)


def receiver_case(case: str, counting: bool) -> tuple[RestrictedExecutor, object, str]:
    source, make, name, simple = RECEIVER_CASES[case]
    executor = RestrictedExecutor(imports=("fractions",), count_operations=counting)
    executor.execute(source.format(methods=METHODS.format(name=name)), filename="<t>")
    executor.execute(f"obj = {make}", filename="<t>")
    obj = executor._namespace["obj"]
    assert (type(obj) in executor.guards.simple_own) is simple
    mangled = f"_C{name}" if name.startswith("__") else name
    return executor, obj, mangled


def with_full_guard(executor: RestrictedExecutor, name: str) -> None:
    """Tools ``full_read(obj)`` and ``full_bump(obj)``: ``obj.name`` and ``obj.name += 1``
    through the full guards (``getattr_guard``, ``augmented_target``), called from sandboxed
    code so that own code they reach (a property) runs with the run's budget."""
    guards = executor.guards

    def full_read(obj: object) -> object:
        return guards.getattr_guard(obj, name)

    def full_bump(obj: object) -> object:
        target = guards.augmented_target(obj, name)
        value = getattr(target, name)
        value += 1
        setattr(target, name, value)
        return guards.getattr_guard(obj, name)

    executor.bind_tools({"full_read": full_read, "full_bump": full_bump})


@pytest.mark.parametrize("case", sorted(RECEIVER_CASES))
@pytest.mark.parametrize("use", ["read", "bump"])
@pytest.mark.parametrize("counting", [False, True], ids=["worker", "in-process"])
def test_the_receiver_fast_path_answers_as_the_full_guard(
    case: str, use: str, counting: bool
) -> None:
    # Each side on an object of its own: a bump changes it.
    full_executor, _, name = receiver_case(case, counting)
    with_full_guard(full_executor, name)
    fast_executor, _, _ = receiver_case(case, counting)
    assert outcome(fast_executor, f"obj.{use}()") == outcome(full_executor, f"full_{use}(obj)")


def test_methods_test_their_receiver_once_and_skip_a_rebound_one() -> None:
    code = transformed(
        "class C:\n    def f(self):\n        self.n += 1\n        return self.n, self._m\n"
        "    def g(self):\n        self = other\n        return self.n\n"
        "    def h(self):\n        def inner():\n            nonlocal self\n"
        "            self = other\n        inner()\n        return self._m\n"
    )
    f, g, h = code.split("\n    def ")[1:4]
    assert f.count("_simple_self_ = _type_(self) in _simple_") == 1
    assert f.count("_simple_self_ or") == 2 and "_simple_self_ and" in f
    assert "_simple_self_" not in g and "_simple_self_" not in h
    assert "_getattr_(self, '_m')" in h


def test_a_module_on_an_own_instance_is_refused_by_the_receiver_fast_path() -> None:
    executor, obj, name = receiver_case("instance-attribute", counting=True)
    obj._x = types  # type: ignore[attr-defined]  # what no sandboxed code can reach
    with pytest.raises(GuardError, match="module"):
        executor.execute("obj.read()", filename="<t>")
    with pytest.raises(GuardError, match="module"):
        executor.execute("obj.bump()", filename="<t>")
    with pytest.raises(GuardError, match="module"):
        executor.guards.getattr_guard(obj, name)


def test_a_method_called_on_a_foreign_receiver_takes_the_full_guard() -> None:
    executor, _, _ = receiver_case("instance-attribute", counting=True)
    executor.execute(
        "import fractions\nclass D:\n    def peek(self):\n        return self._numerator\n",
        filename="<t>",
    )
    with pytest.raises(GuardError, match="_numerator"):
        executor.execute("D.peek(fractions.Fraction(1, 2))", filename="<t>")


@pytest.mark.parametrize(
    "code",
    [
        "class C:\n    def __init__(self):\n        self._n = 0\n        self.m = 0\n"
        "    def step(self):\n        self._n += 1\n        self.m += self._n\n"
        "        return self.m\nc = C()\nwhile True:\n    c.step()",
        "class C:\n    def _go(self):\n        return self._go() + self._go()\n"
        "    def go(self):\n        try:\n            return self._go()\n"
        "        except RecursionError:\n            return self.go()\nC().go()",
    ],
    ids=["loop-of-receiver-reads-and-writes", "receiver-recursion"],
)
def test_the_budget_stops_code_that_only_runs_the_receiver_fast_path(code: str) -> None:
    assert "_simple_self_ = " in transformed(code)
    executor = RestrictedExecutor(count_operations=True)
    budget = OperationBudget(50_000)
    with pytest.raises(Exception):  # noqa: B017 - whatever the code last raised
        executor.execute(code, filename="<t>", budget=budget)
    assert budget.exhausted and budget.reason() == "operations"


# -- the module's names as globals -----------------------------------------------------------------
def test_the_module_declares_its_names_global_after_its_docstring_and_future_imports() -> None:
    code = (
        '"""doc"""\nfrom __future__ import annotations\ntotal = 0\n'
        "for i in range(3):\n    total += i\n"
    )
    assert transformed(code).splitlines()[1:3] == [
        "from __future__ import annotations",
        "global _budget_, _next_, _pass_, _ret_, _rv_, _type_, i, range, total",
    ]
    assert run(code + "total", "__future__", counting=True) == "3"


@pytest.mark.parametrize("counting", [False, True], ids=["worker", "in-process"])
def test_module_names_bound_every_way_keep_their_values(counting: bool) -> None:
    code = (
        "import math\nx: int = 2\ny = x + 1\n"
        "try:\n    raise ValueError('v')\nexcept ValueError as e:\n    caught = str(e)\n"
        "class K:\n    z = y\ndef f():\n    global w\n    w = K.z\nf()\n"
        "match (1, 2):\n    case (a, *rest):\n        pass\n"
        "match 3:\n    case K.z:\n        hit = True\n"
        "squares = [q * q for q in range(3)]\ndel a\n"
        "try:\n    a\n    gone = False\nexcept NameError:\n    gone = True\n"
        "(math.floor(1.5), x, y, caught, w, rest, hit, squares, gone)"
    )
    assert "global " in transformed(code) and "x: int = 2" in transformed(code)
    assert run(code, "math", counting=counting) == ("(1, 2, 3, 'v', 3, [2], True, [0, 1, 4], True)")


def test_an_annotated_module_name_is_not_declared() -> None:
    declaration = transformed("x: int = 1\ny = x\n").splitlines()[0]
    assert declaration == "global y"


def test_the_budget_stops_a_module_level_loop_of_global_reads() -> None:
    executor = RestrictedExecutor(count_operations=True)
    budget = OperationBudget(10_000)
    with pytest.raises(StopIteration):
        executor.execute(
            "items = []\nwhile True:\n    items.append(1)", filename="<t>", budget=budget
        )
    assert budget.reason() == "operations"
