"""An own subclass of a library descriptor is refused at class creation unless its descriptor
methods were reviewed (issue 29, item 4): a library descriptor that stores into the instance's
real ``__dict__`` under a name it holds as data would let the subclass choose that name (a
dunder host code then obeys: ``copy`` asks ``x.__reduce_ex__``)."""

from __future__ import annotations

import pytest

from safeexec.restricted import RestrictedExecutor
from safeexec.restricted.guards import GuardError, Guards


class _StoringDescriptor:
    """A library descriptor as ``cached_property`` is one, without ``__set_name__``: it stores
    under ``self.key``, which a subclass may set to whatever it likes."""

    def __init__(self, key: str) -> None:
        self.key = key

    def __get__(self, instance: object, owner: type | None = None) -> object:
        return self if instance is None else vars(instance).get(self.key)

    def __set__(self, instance: object, value: object) -> None:
        vars(instance)[self.key] = value


def _body() -> None:
    """An empty class body."""


@pytest.mark.parametrize("hook", ["__get__", "__set__", "__delete__"])
def test_an_own_subclass_of_an_unreviewed_descriptor_is_refused(hook: str) -> None:
    library = type("LibraryDescriptor", (), {hook: lambda self, *args: None})
    with pytest.raises(GuardError, match=f"whose {hook} would run on it"):
        Guards().build_class(_body, "Own", library)


def test_the_storing_descriptor_cannot_be_subclassed() -> None:
    with pytest.raises(GuardError, match="_StoringDescriptor, whose __get__"):
        Guards().build_class(_body, "Own", _StoringDescriptor)


def test_reviewed_descriptors_still_subclass() -> None:
    code = (
        "class Loud(property):\n    pass\n"
        "class A:\n    @Loud\n    def x(self):\n        return 3\n"
        "class C(classmethod):\n    pass\n"
        "A().x"
    )
    assert RestrictedExecutor().execute(code, filename="<t>") == "3"


def test_a_library_descriptor_used_as_it_is_still_works() -> None:
    code = (
        "import functools\nclass A:\n    @functools.cached_property\n    def x(self):\n"
        "        return 4\nA().x"
    )
    assert RestrictedExecutor(imports=("functools",)).execute(code, filename="<t>") == "4"
