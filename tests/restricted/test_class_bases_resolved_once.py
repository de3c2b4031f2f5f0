"""A class statement's bases are resolved once, and the checked tuple is the one built."""

from __future__ import annotations

import pytest

from safeexec.restricted import RestrictedExecutor
from safeexec.restricted.guards import GuardError, Guards


class _Flip:
    """A base whose ``__mro_entries__`` answers differently on its second call."""

    def __init__(self, first: tuple[type, ...], later: tuple[type, ...]) -> None:
        self.calls = 0
        self.first, self.later = first, later

    def __mro_entries__(self, bases: tuple[object, ...]) -> tuple[type, ...]:
        self.calls += 1
        return self.first if self.calls == 1 else self.later


def _body() -> None:
    """An empty class body (run in the class namespace)."""


def test_bases_resolve_once_and_the_checked_ones_are_built() -> None:
    # Checked: int. A second resolution would hand back a metaclass, which the check refuses.
    flip = _Flip((int,), (type,))
    cls = Guards().build_class(_body, "C", flip)
    assert flip.calls == 1
    assert isinstance(cls, type) and cls.__bases__ == (int,)
    assert cls.__orig_bases__ == (flip,)  # type: ignore[attr-defined]


def test_what_resolution_hands_back_first_is_what_is_checked() -> None:
    with pytest.raises(GuardError, match="metaclasses cannot be subclassed"):
        Guards().build_class(_body, "C", _Flip((type,), (int,)))


def test_class_statements_build_as_before() -> None:
    # super() (the class cell), a Generic base (__orig_bases__), a NamedTuple (__mro_entries__).
    code = (
        "from typing import Generic, NamedTuple, TypeVar\n"
        "T = TypeVar('T')\n"
        "class A:\n    def hi(self):\n        return 'A'\n"
        "class B(A):\n    def hi(self):\n        return 'B' + super().hi()\n"
        "class Box(Generic[T]):\n    pass\n"
        "class P(NamedTuple):\n    x: int\n"
        "B().hi(), P(1).x, isinstance(Box(), Box)\n"
    )
    shown = RestrictedExecutor(imports=("typing",)).execute(code, filename="<test>")
    assert shown == "('BA', 1, True)"
