"""Positional makers for the DSL's frozen, slotted value classes (syntax nodes, types, call
sites): each equal to its class called with its fields by name, in order, made in about half the
time (a frozen ``__init__`` pays a keyword call and an ``object.__setattr__`` per field; a maker
sets the slots directly). The front end makes one value per syntax node, so this is its hot path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any, TypeVar

__all__ = ["maker"]

_Value = TypeVar("_Value")


def maker(cls: type[_Value]) -> Callable[..., _Value]:
    """``cls``'s positional maker (a frozen, slotted dataclass of two to five fields); a test
    holds each maker to its class."""
    setters = tuple(vars(cls)[f.name].__set__ for f in fields(cls))  # type: ignore[arg-type]
    make = _MAKERS[len(setters)]
    return make(cls, *setters)


def _make2(cls: Any, s0: Any, s1: Any) -> Callable[[Any, Any], Any]:
    new = object.__new__

    def make(a: Any, b: Any) -> Any:
        value = new(cls)
        s0(value, a)
        s1(value, b)
        return value

    return make


def _make3(cls: Any, s0: Any, s1: Any, s2: Any) -> Callable[[Any, Any, Any], Any]:
    new = object.__new__

    def make(a: Any, b: Any, c: Any) -> Any:
        value = new(cls)
        s0(value, a)
        s1(value, b)
        s2(value, c)
        return value

    return make


def _make4(cls: Any, s0: Any, s1: Any, s2: Any, s3: Any) -> Callable[[Any, Any, Any, Any], Any]:
    new = object.__new__

    def make(a: Any, b: Any, c: Any, d: Any) -> Any:
        value = new(cls)
        s0(value, a)
        s1(value, b)
        s2(value, c)
        s3(value, d)
        return value

    return make


def _make5(
    cls: Any, s0: Any, s1: Any, s2: Any, s3: Any, s4: Any
) -> Callable[[Any, Any, Any, Any, Any], Any]:
    new = object.__new__

    def make(a: Any, b: Any, c: Any, d: Any, e: Any) -> Any:
        value = new(cls)
        s0(value, a)
        s1(value, b)
        s2(value, c)
        s3(value, d)
        s4(value, e)
        return value

    return make


# By field count: one unrolled maker each (a loop over the setters costs what they save).
_MAKERS: dict[int, Callable[..., Callable[..., Any]]] = {
    2: _make2, 3: _make3, 4: _make4, 5: _make5,
}  # fmt: skip
