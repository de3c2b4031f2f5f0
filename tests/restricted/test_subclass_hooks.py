"""A library class's ``__init_subclass__`` runs only where it was reviewed (default deny)."""

from __future__ import annotations

from typing import ClassVar

import pytest

from safeexec.restricted import RestrictedExecutor
from safeexec.restricted.guards import GuardError, Guards


def _body() -> None:
    """An empty class body."""


class _Library:
    """Stands for any library class with a subclass hook nobody reviewed."""

    seen: ClassVar[list[str]] = []

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        _Library.seen.append(cls.__name__)


class _LibraryChild(_Library):
    """Inherits the hook: a subclass of this runs it too."""


@pytest.mark.parametrize("base", [_Library, _LibraryChild])
def test_an_unreviewed_hook_is_refused_before_it_runs(base: type) -> None:
    before = list(_Library.seen)
    with pytest.raises(GuardError, match="__init_subclass__ would run on it"):
        Guards().build_class(_body, "Mine", base)
    assert _Library.seen == before  # refused before the class was made


def test_a_template_subclass_cannot_pick_the_pattern_the_real_re_runs() -> None:
    code = "import string\nclass T(string.Template):\n    idpattern = '(x+x+)+y'\n"
    with pytest.raises(GuardError, match="cannot subclass Template"):
        RestrictedExecutor(imports=("string",)).execute(code, filename="<test>")


def test_reviewed_hooks_still_run() -> None:
    code = (
        "import random\n"
        "from typing import Generic, Protocol, TypeVar\n"
        "T = TypeVar('T')\n"
        "class R(random.Random):\n    pass\n"
        "class Box(Generic[T]):\n    pass\n"
        "class Sized(Protocol):\n    def size(self) -> int: ...\n"
        "0 <= R(1).random() < 1, isinstance(Box(), Box)\n"
    )
    shown = RestrictedExecutor(imports=("random", "typing")).execute(code, filename="<test>")
    assert shown == "(True, True)"
    # The plain Template, used as it is, is fine.
    plain = "import string\nstring.Template('$a').substitute(a=1)\n"
    assert RestrictedExecutor(imports=("string",)).execute(plain, filename="<t>") == "'1'"


def test_a_descriptor_subclass_cannot_choose_where_the_library_stores() -> None:
    # cached_property writes instance.__dict__[attrname]; a subclass could name a dunder there.
    code = "import functools\nclass Sneaky(functools.cached_property):\n    pass\n"
    with pytest.raises(GuardError, match="cannot subclass cached_property"):
        RestrictedExecutor(imports=("functools",)).execute(code, filename="<test>")


def test_reviewed_descriptors_and_plain_uses_still_work() -> None:
    code = (
        "import functools\n"
        "from dataclasses import dataclass, field\n"
        "class Loud(property):\n    pass\n"
        "class Circle:\n"
        "    def __init__(self, r):\n        self.r = r\n"
        "    @functools.cached_property\n"
        "    def area(self):\n        return 3 * self.r * self.r\n"
        "    @Loud\n"
        "    def twice(self):\n        return 2 * self.r\n"
        "@dataclass\nclass P:\n    xs: list = field(default_factory=list)\n"
        "Circle(2).area, Circle(2).twice, P().xs\n"
    )
    shown = RestrictedExecutor(imports=("functools", "dataclasses")).execute(code, filename="<t>")
    assert shown == "(12, 4, [])"


class _HookSlots:
    """A library class whose slot is named like a hook."""

    __slots__ = ("__reduce_ex__",)


def test_an_inherited_slot_named_like_a_hook_is_refused() -> None:
    with pytest.raises(GuardError, match=r"slot cannot be named '__reduce_ex__' \(declared by"):
        Guards().build_class(_body, "Mine", _HookSlots)
