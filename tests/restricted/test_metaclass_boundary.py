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
