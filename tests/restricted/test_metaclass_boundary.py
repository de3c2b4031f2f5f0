"""No value handed to the code is a metaclass: a host helper's return (a tool stands for any),
a default argument it passes back, a tuple it returns, an exception it raises, a read."""

from __future__ import annotations

import abc

import pytest

from safeexec.restricted import RestrictedExecutor
from safeexec.restricted.guards import GuardError


class _Carrier(Exception):
    def __init__(self, kind: type) -> None:
        super().__init__("carried", kind)
        self.kind = kind


class _Holder:
    """A host object (a library helper's result stands for any) holding metaclasses."""

    factory = abc.ABCMeta

    def __init__(self) -> None:
        self.kind = type
        self.kinds = ("x", [type])
        self.label = "x"


def _executor() -> RestrictedExecutor:
    executor = RestrictedExecutor(imports=("typing",))

    def helper() -> object:
        return type

    def with_default(kind: object = abc.ABCMeta) -> object:
        return kind

    def pair() -> object:
        return ("x", [type])

    def raiser() -> None:
        raise _Carrier(type)

    def host_generator() -> object:
        yield int
        yield type

    def stopper() -> None:
        stop = StopIteration()  # no arguments: the value is the interpreter's field alone
        stop.value = type
        raise stop

    def raiser_attribute() -> None:
        error = ValueError("plain")
        error.kind = type  # type: ignore[attr-defined]
        raise error

    executor.bind_tools(
        {
            "helper": helper,
            "with_default": with_default,
            "pair": pair,
            "raiser": raiser,
            "raiser_attribute": raiser_attribute,
            "host_generator": host_generator,
            "stopper": stopper,
            "holder": _Holder,
        }
    )
    return executor


@pytest.mark.parametrize(
    "code",
    [
        "helper()('X', (), {})",
        "with_default()('X', (), {})",
        "pair()[1][0]('X', (), {})",
        "[1], [2], [3]\npair()[1][0]('X', (), {})",
        "try:\n    raiser()\nexcept Exception as e:\n    e.args[1]('X', (), {})",
        "try:\n    raiser_attribute()\nexcept ValueError as e:\n    e.kind('X', (), {})",
        "import typing\ntyping.get_origin(typing.Type[int])('X', (), {})",
        "for t in host_generator():\n    kinds = t",
        "try:\n    stopper()\nexcept StopIteration as e:\n    e.value('X', (), {})",
    ],
    ids=[
        "return",
        "default-argument",
        "in-a-tuple",
        "after-other-tuples",
        "exception-args",
        "exception-attr",
        "typing",
        "library-generator",
        "stop-iteration-value",
    ],
)
def test_a_metaclass_never_reaches_the_code(code: str) -> None:
    with pytest.raises(GuardError, match="metaclass"):
        _executor().execute(code, filename="<t>")


@pytest.mark.parametrize(
    "code",
    [
        "h = holder()\nk = h.kind\nk('X', (), {})",
        "holder().kind('X', (), {})",
        "h = holder()\nh.kind('X', (), {})",
        "h = holder()\nh.factory('X', (), {})",
        "h = holder()\nh.kinds[1][0]('X', (), {})",
        "getattr(holder(), 'kind')('X', (), {})",
        "def f(h):\n    return h.kind\nf(holder())('X', (), {})",
        "class C:\n    def m(self, h):\n        return h.kind\nC().m(holder())('X', (), {})",
        "h = holder()\n[h.kind for _ in range(1)][0]('X', (), {})",
        "h = holder()\nh.kind, h.kind\nh.kind('X', (), {})",
        "h = holder()\nh.label\nk = h.kind\nk('X', (), {})",
        "h = holder()\nh.label\nh.kind('X', (), {})",
        "h = holder()\nh.label\n[h.kind for _ in range(1)][0]('X', (), {})",
        "h = holder()\nh.label\nclass C:\n    k = h.kind\nC.k('X', (), {})",
        "class C:\n    def m(self, h):\n        h.label\n        return h.kind\n"
        "C().m(holder())('X', (), {})",
    ],
    ids=[
        "read",
        "method-call-on-a-call",
        "method-call-on-a-name",
        "class-attribute",
        "in-a-tuple",
        "getattr",
        "in-a-function",
        "in-a-method",
        "in-a-comprehension",
        "after-plain-reads",
        "inline-read",
        "inline-method-call",
        "inline-in-a-comprehension",
        "inline-in-a-class-body",
        "inline-in-a-method",
    ],
)
def test_a_metaclass_is_never_read_off_a_host_object(code: str) -> None:
    with pytest.raises(GuardError, match="metaclass"):
        _executor().execute(code, filename="<t>")


def test_a_metaclass_host_code_stored_in_an_own_instance_is_not_read_by_the_full_guard() -> None:
    # ``plant`` stands for a library helper writing into an own instance: the private read's
    # fast path and ``getattr`` hand out no class. (A public ``c.kind`` off an own instance is
    # inline and plain: what host code puts there it made through a call of the code's, the
    # partial below was the one way found to build such a call, and the crawl reports a plant.)
    executor = _executor()

    def plant(own: object) -> None:
        vars(own)["_kind"] = type
        vars(own)["kind"] = type

    executor.bind_tools({"plant": plant})
    executor.execute("class C:\n    pass\nc = C()\nc._kind = 1\nc._kind\nplant(c)", filename="<t>")
    for read in ("c._kind", "getattr(c, 'kind')"):
        with pytest.raises(GuardError, match="metaclass"):
            executor.execute(f"{read}('X', (), {{}})", filename="<t>")


_GET_TYPE = "functools.partial(typing.get_origin, typing.Type[int])"


@pytest.mark.parametrize(
    "code",
    [
        f"collections.defaultdict({_GET_TYPE})['k']('X', (), {{}})",
        "@dataclasses.dataclass\nclass D:\n"
        f"    k: object = dataclasses.field(default_factory={_GET_TYPE})\n"
        "D().k('X', (), {})",
        f"{_GET_TYPE}()('X', (), {{}})",
        f"p = {_GET_TYPE}\nq = functools.partial(p)\nq()('X', (), {{}})",
    ],
    ids=["defaultdict-factory", "dataclass-default-factory", "called-by-the-code", "nested"],
)
def test_a_partial_host_code_calls_hands_back_no_metaclass(code: str) -> None:
    executor = RestrictedExecutor(imports=("typing", "functools", "collections", "dataclasses"))
    prelude = "import collections, dataclasses, functools, typing\n"
    with pytest.raises(GuardError, match="metaclass"):
        executor.execute(prelude + code, filename="<t>")


def test_a_partial_still_works_like_one() -> None:
    executor = RestrictedExecutor(imports=("functools",))
    code = (
        "import functools\ndef add(a, b):\n    return a + b\n"
        "p = functools.partial(add, 1)\nq = functools.partial(int, base=2)\n"
        "(p(2), q('101'), p.args, isinstance(p, functools.partial))"
    )
    assert executor.execute(code, filename="<t>") == "(3, 5, (1,), True)"


def test_reads_off_builtin_values_and_own_objects_go_inline() -> None:
    executor = _executor()
    code = (
        "class P:\n    def __init__(self):\n        self.x = 2\n"
        "p, s, items, n, h = P(), 'a', [1], 3, holder()\n"
        "(p.x, s.upper(), items.count(1), n.real, h.label)"
    )
    assert executor.execute(code, filename="<t>") == "(2, 'A', 1, 3, 'x')"
    plain = executor.guards.plain_types
    assert {str, list, int} <= plain and "P" in {kind.__name__ for kind in plain}
    assert _Holder not in plain and _Holder in executor.guards.checked_types


def test_classes_and_plain_values_still_pass() -> None:
    executor = _executor()
    executor.bind_tools({"kind": lambda: int, "many": lambda: (1, [str], "x")})
    assert executor.execute("kind()('7') + len(many())", filename="<t>") == "10"


@pytest.mark.parametrize(
    "code",
    [
        "t = helper()",
        "def f():\n    return helper()\nt = f()",
        "t = (lambda: helper())()",
        "t = [helper() for _ in range(1)][0]",
        "t = next(helper() for _ in range(1))",
        "t = {k: helper() for k in 'a'}['a']",
        "class C:\n    t = helper()",
        "class C:\n    t = [helper() for _ in range(1)]",
        "def g():\n    yield helper()\nt = next(g())",
        "[int() for _ in range(3)]\nt = helper()",
    ],
    ids=[
        "module",
        "function",
        "lambda",
        "list-comprehension",
        "generator-expression",
        "dict-comprehension",
        "class-body",
        "class-body-comprehension",
        "generator",
        "after-plain-returns",
    ],
)
def test_every_place_a_call_can_stand_is_checked(code: str) -> None:
    with pytest.raises(GuardError, match="metaclass"):
        _executor().execute(code, filename="<t>")


def test_own_generators_are_handed_out_as_they_are() -> None:
    code = (
        "def g():\n    got = yield 1\n    yield got * 2\n"
        "it = g()\nfirst = next(it)\n(first, it.send(5))"
    )
    assert _executor().execute(code, filename="<t>") == "(1, 10)"
