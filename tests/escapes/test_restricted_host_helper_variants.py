"""Variants of issue 9's classes: host helpers that read or write attributes the code names,
private helpers inherited from library classes and metaclasses, host-made methods called with a
host object as ``self``, descriptor and class-creation hooks, and format-string walks.

Each is refused by the runtime (the guard's message says why) and leaves the host unchanged.
"""

from __future__ import annotations

import csv
import json
import statistics
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory

_DATA = "import dataclasses\n@dataclasses.dataclass\nclass D:\n    x: int = 0\n"
_ENUM = "import enum\nclass E(enum.Enum):\n    A = 1\n"

ATTACKS = {
    # Higher-order helpers that write to what they are handed.
    "total_ordering-on-a-library-class": (
        "import functools, statistics\nfunctools.total_ordering(statistics.NormalDist)",
        "GuardError",
    ),
    "dataclass-on-a-library-class": (
        "import dataclasses, json\ndataclasses.dataclass(json.JSONEncoder)",
        "GuardError",
    ),
    "wraps-onto-a-host-function": (
        "import functools, json\ndef f():\n    pass\nfunctools.wraps(f)(json.dumps)",
        "GuardError",
    ),
    "abstractmethod-on-a-host-property": (
        "import abc, statistics\nabc.abstractmethod(property(statistics.mean))",
        "GuardError",
    ),
    "abstractmethod-on-a-host-classmethod": (
        "import abc, json\nabc.abstractmethod(classmethod(json.dumps))",
        "GuardError",
    ),
    # Host-made methods of own classes, called with a host object as self.
    "dataclass-init-on-a-host-function": (
        _DATA + "import statistics\nD.__init__(statistics.mean, 5)",
        "GuardError",
    ),
    "dataclass-init-on-a-host-class": (
        _DATA + "import json\nD.__init__(json.JSONEncoder, 5)",
        "GuardError",
    ),
    "inherited-enum-repr-on-a-host-class": (
        _ENUM + "import json\nE.__repr__(json.JSONEncoder)",
        "GuardError",
    ),
    # Library property setters write whatever they are given.
    "property-setter-of-a-library-class": (
        "import csv\ncsv.DictReader.fieldnames.fset(csv.DictReader, ['x'])",
        "GuardError",
    ),
    "property-getter-of-a-library-class": (
        "import csv\ncsv.DictReader.fieldnames.fget",
        "GuardError",
    ),
    # What host code was looking at when it failed.
    "attribute-error-obj": (
        "try:\n    (1).missing\nexcept AttributeError as e:\n    print(e.obj)",
        "GuardError",
    ),
    # Other private helpers of metaclasses and library bases.
    "enum-metaclass-helper": (_ENUM + "E._get_mixins_('X', ())", "GuardError"),
    "enum-missing-inherited": (_ENUM + "E._missing_(1)", "GuardError"),
    "abc-dump-registry": (
        "import abc\nclass S(abc.ABC):\n    pass\nS._dump_registry()",
        "GuardError",
    ),
    "functional-enum-convert": (
        "import enum\nX = enum.Enum('X', 'a', module='os')\n"
        "X._convert_('Y', 'uuid', lambda n: True)",
        "GuardError",
    ),
    # Class-creation and descriptor hooks run by host machinery.
    "init-subclass-hook": (
        "class Base:\n    def __init_subclass__(cls, **kw):\n        pass",
        "SyntaxError",
    ),
    "set-name-hook": (
        "class Hook:\n    def __set_name__(self, owner, name):\n        pass",
        "SyntaxError",
    ),
    "descriptor-get": (
        "class Desc:\n    def __get__(self, obj, kind=None):\n        return 1",
        "SyntaxError",
    ),
    "reduce-ex-hook": (
        "class R:\n    def __reduce_ex__(self, protocol):\n        return (len, ())",
        "SyntaxError",
    ),
    # Format-string walks.
    "format-item-walk": ("'{0[__builtins__]}'.format({'__builtins__': 1})", "GuardError"),
    "format-keyword-walk": ("'{x.__class__}'.format(x=1)", "GuardError"),
    # Typing helpers that evaluate strings are not exposed.
    "get-type-hints": (
        "import typing\ntyping.get_type_hints(typing.NamedTuple('P', [('x', 'os.system')]))",
        "restricted module",
    ),
}


@pytest.mark.parametrize("attack", list(ATTACKS), ids=list(ATTACKS))
def test_host_helper_variant_is_refused(restricted_box: BoxFactory, attack: str) -> None:
    code, fragment = ATTACKS[attack]
    box = restricted_box()
    box.assert_refused(code, fragment)
    assert not vars(statistics.mean) and not vars(json.dumps)
    assert "x" not in vars(json.JSONEncoder) and "_fieldnames" not in vars(csv.DictReader)
    box.assert_usable()


def test_own_namedtuple_helpers_defined_on_the_class_still_work(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    outcome = box.run(
        "import collections\nP = collections.namedtuple('P', 'a b')\n"
        "p = P._make([1, 2])\nprint(p._replace(a=3), P._fields)"
    )
    assert outcome.stdout == "P(a=3, b=2) ('a', 'b')\n", outcome.text
