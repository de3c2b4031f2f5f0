"""Writes to objects the code did not create: classes, functions and instances of the host."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory


@pytest.mark.parametrize(
    "code",
    [
        "int.x = 1",
        "object.__setattr__(1, 'x', 2)",
        "setattr(str, 'upper', None)",
        "delattr(dict, 'keys')",
        "import datetime\ndatetime.date.today = None",
        "import collections\nc = collections.Counter()\nc.__class__ = dict",
        "class A:\n    pass\na = A()\na.__class__ = int",
        "class A:\n    pass\nA.__bases__ = (dict,)",
        "class A:\n    pass\nsetattr(A, '__module__', 'os')",
        "def f():\n    pass\nf.__code__ = None",
        "def f():\n    pass\nf.__globals__['x'] = 1",
        "import re\nre.compile('x').flags = 0",
    ],
)
def test_foreign_objects_cannot_be_modified(restricted_box: BoxFactory, code: str) -> None:
    box = restricted_box()
    outcome = box.run(code)
    assert outcome.status.value == "error", outcome.text
    box.assert_usable()


def test_own_objects_can_be_modified(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    code = """
class A:
    pass
a = A()
a.x = 1
setattr(a, '_y', 2)
A.shared = 3
def f():
    pass
f.calls = 4
(a.x, a._y, a.shared, f.calls)
"""
    assert box.run(code).stdout == "(1, 2, 3, 4)\n"
