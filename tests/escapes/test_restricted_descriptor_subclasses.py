"""Own subclasses of library descriptors, which could choose the name under which the library
stores into an instance's real ``__dict__`` (issue 29, item 4): refused at class creation unless
the descriptor's hooks were reviewed; dataclass helpers read the field table off the class."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory

ATTACKS = {
    "cached-property-subclass-choosing-the-name": (
        "import functools, copy\nclass P(functools.cached_property):\n"
        "    def __init__(self, f):\n        super().__init__(f)\n"
        "        self.attrname = ''.join(['__reduce', '_ex__'])\n"
        "class A:\n    @P\n    def hook(self):\n        return lambda p: (print, ('obeyed',))\n"
        "a = A()\na.hook\ncopy.copy(a)"
    ),
    "partialmethod-subclass": "import functools\nclass P(functools.partialmethod):\n    pass",
    "cached-property-subclass-name-from-data": (
        "import functools\nname = '__dataclass' + '_fields__'\n"
        "class P(functools.cached_property):\n    def __set_name__(self, owner, n):\n"
        "        self.attrname = name"
    ),
}


@pytest.mark.parametrize("attack", list(ATTACKS), ids=list(ATTACKS))
def test_an_own_subclass_of_a_library_descriptor_is_refused(
    restricted_box: BoxFactory, attack: str
) -> None:
    box = restricted_box()
    outcome = box.assert_refused(ATTACKS[attack])
    assert "obeyed" not in outcome.stdout
    box.assert_usable()


def test_dataclass_helpers_read_own_dataclasses_by_their_class(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    outcome = box.run(
        "import dataclasses\n@dataclasses.dataclass\nclass D:\n    x: int = 1\n    y: str = 'a'\n"
        "d = dataclasses.replace(D(), y='b')\n"
        "print([f.name for f in dataclasses.fields(d)], dataclasses.is_dataclass(D), d,\n"
        "      dataclasses.asdict(d))"
    )
    assert outcome.stdout == "['x', 'y'] True D(x=1, y='b') {'x': 1, 'y': 'b'}\n", outcome.text


def test_dataclass_helpers_refuse_what_is_not_a_dataclass(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    box.assert_refused(
        "import dataclasses\ndataclasses.fields(dataclasses.field())",
        "TypeError",
    )
