"""The ``__subclasses__`` walk from any object to ``subprocess.Popen`` or ``os._wrap_close``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory


@pytest.mark.parametrize(
    "code",
    [
        "().__class__.__bases__[0].__subclasses__()",
        "().__class__.__base__.__subclasses__()",
        "object.__subclasses__()",
        "type(()).__mro__[-1].__subclasses__()",
        "[c for c in object.__subclasses__() if c.__name__ == 'Popen'][0](['id'])",
        "type(object)",
        "(1).__class__.__class__",
        "type(int).__subclasses__(object)",
        "int.mro()",
        "type('X', (object,), {'__del__': lambda self: 0})",
        "class M(type):\n    pass",
        "class X(metaclass=type):\n    pass",
        "class A:\n    pass\nA.__bases__",
        "class A:\n    pass\nA.__mro__",
        "class A:\n    pass\nA().__class__.__class__",
    ],
)
def test_class_hierarchy_walks_are_refused(restricted_box: BoxFactory, code: str) -> None:
    box = restricted_box()
    outcome = box.run(code)
    assert outcome.status.value == "error", outcome.text
    assert "Popen" not in outcome.stdout and "_wrap_close" not in outcome.stdout
    box.assert_usable()
