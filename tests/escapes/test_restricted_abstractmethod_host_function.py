"""``abc.abstractmethod(f)`` sets ``f.__isabstractmethod__``: on a host function it changes the
host's own object (in-process: the very function the host calls)."""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory


@pytest.mark.parametrize(
    "attack",
    [
        "import abc, statistics\nabc.abstractmethod(statistics.mean)",
        "import abc, json\nabc.abstractmethod(json.dumps)",
        "import abc, statistics\nabc.abstractmethod(statistics.NormalDist)",
        "import abc\nabc.abstractmethod(sorted)",
    ],
    ids=["python-function", "json-dumps", "library-class", "builtin"],
)
def test_abstractmethod_on_a_host_object_is_refused(
    restricted_box: BoxFactory, attack: str
) -> None:
    box = restricted_box()
    try:
        box.assert_refused(attack, "GuardError", "abstractmethod")
        assert not hasattr(statistics.mean, "__isabstractmethod__")
        assert not hasattr(statistics.NormalDist, "__isabstractmethod__")
    finally:
        vars(statistics.mean).pop("__isabstractmethod__", None)
    box.assert_usable()


def test_abstractmethod_on_own_methods_still_works(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    outcome = box.run(
        "import abc\n"
        "class Shape(abc.ABC):\n"
        "    @abc.abstractmethod\n"
        "    def area(self):\n        pass\n"
        "class Square(Shape):\n"
        "    def area(self):\n        return 4\n"
        "try:\n    Shape()\nexcept TypeError:\n    print('abstract')\n"
        "print(Square().area())"
    )
    assert outcome.stdout == "abstract\n4\n", outcome.text
