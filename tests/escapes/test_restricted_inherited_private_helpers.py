"""Private helpers inherited from library classes and metaclasses, called on own classes.

``class E(enum.Enum)`` is an own class, but ``E._convert_`` is ``EnumType._convert_``: host code
that reads any loaded module's ``__dict__`` and hands its values back as members. A private name
on an own object is only the code's own when an own class (or the instance) defines it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory


@pytest.mark.parametrize(
    "attack",
    [
        "import enum\nclass E(enum.Enum):\n    A = 1\n"
        "print([m.value for m in E._convert_('X', 'uuid', lambda n: n == 'os')])",
        "import enum\nclass E(enum.Enum):\n    A = 1\n"
        "print(getattr(E, '_convert_')('X', 'uuid', lambda n: n == 'os'))",
        "import enum\nclass F(enum.IntFlag):\n    A = 1\n"
        "print(list(F._convert_('X', 'uuid', lambda n: n == 'os')))",
        "import enum\nclass E(enum.Enum):\n    A = 1\n"
        "print(E.A._convert_('X', 'uuid', lambda n: n == 'os'))",
    ],
    ids=["enum-class", "getattr-builtin", "intflag", "enum-member"],
)
def test_inherited_enum_convert_is_refused(restricted_box: BoxFactory, attack: str) -> None:
    box = restricted_box()
    outcome = box.assert_refused(attack, "GuardError", "_convert_")
    assert "module" not in outcome.stdout, outcome.text
    box.assert_usable()


def test_private_names_the_code_defines_still_work(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    outcome = box.run(
        "class Base:\n    _kind = 'base'\n    def _helper(self):\n        return self._kind\n"
        "class Child(Base):\n    def __init__(self):\n        self._x = 3\n"
        "c = Child()\nprint(c._helper(), c._x, Child._kind)"
    )
    assert outcome.stdout == "base 3 base\n", outcome.text
