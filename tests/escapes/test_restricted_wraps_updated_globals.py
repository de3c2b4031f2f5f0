"""Attribute names as data, written by a host helper: ``functools.wraps(..., updated=...)``.

``update_wrapper`` (host code) does ``getattr(wrapper, name).update(getattr(wrapped, name))`` for
every name in ``updated``. With ``("__globals__",)`` it merges a library module's globals (real
``sys``, ``os``, ``__builtins__``) into the sandbox's namespace, after which ``sys.modules`` is a
plain name load. The runtime's ``wraps`` must only ever write the fixed attribute set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory

_PROBE = """
try:
    print('ESCAPED', sys.modules['os'].getpid())
except NameError:
    print('contained')
"""


@pytest.mark.parametrize(
    "attack",
    [
        "import functools, statistics\n"
        "def f():\n    pass\n"
        "functools.wraps(statistics.mean, updated=('__globals__',))(f)\n",
        "import functools, statistics\n"
        "def f():\n    pass\n"
        "functools.wraps(statistics.mean, ('__module__',), ('__globals__',))(f)\n",
        "import functools, statistics\n"
        "def f():\n    pass\n"
        "functools.wraps(statistics.mean, updated=['__dict__', '__globals__'])(f)\n",
        "import functools, json\n"
        "def f():\n    pass\n"
        "functools.wraps(json.dumps, assigned=('__globals__', '__code__'))(f)\n",
    ],
    ids=["updated-keyword", "updated-positional", "updated-list", "assigned-code"],
)
def test_wraps_never_writes_attribute_names_the_code_chose(
    restricted_box: BoxFactory, attack: str
) -> None:
    box = restricted_box()
    outcome = box.run(attack)
    assert "GuardError" in outcome.text and "wraps" in outcome.text, outcome.text
    probe = box.run(_PROBE)
    assert probe.stdout == "contained\n", probe.text
    box.assert_usable()


def test_wraps_with_the_standard_attributes_still_works(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    outcome = box.run(
        "import functools\n"
        "def inner(x):\n    '''doc of inner'''\n    return x + 1\n"
        "@functools.wraps(inner)\n"
        "def outer(x):\n    return inner(x) * 2\n"
        "print(outer.__name__, outer.__doc__, outer(1))"
    )
    assert outcome.stdout == "inner doc of inner 4\n", outcome.text
