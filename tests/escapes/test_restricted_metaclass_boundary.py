"""No value handed to the code is a metaclass (issue 29, item 3): a library helper's return
(``typing.get_origin`` of ``typing.Type[int]`` is the real ``type``), a tuple or list it hands
back, a default argument passed through, a read, an exception's arguments. With ``type`` in
hand the code could build classes no ``class`` statement made (a ``string.Template`` subclass
whose pattern the real, untimed ``re`` compiles; a class with hooks host code obeys).

The mechanism is ``Guards.returned`` (``_ret_``, around every call), ``Guards._checked`` (reads)
and ``Guards.caught_exception`` (``_exc_``, in every named handler); the tool-bound variants
stand for any host helper a session exposes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory

_BUILD = "\nX = t('X', (string.Template,), {'idpattern': '(a+)+$'})\nprint(X)"

ATTACKS = {
    "typing-get-origin": "import typing, string\nt = typing.get_origin(typing.Type[int])" + _BUILD,
    "typing-get-origin-of-a-bare-alias": "import typing, string\nt = typing.get_origin(typing.Type)"
    + _BUILD,
    "through-next-of-a-map": (
        "import typing, string\nt = next(map(typing.get_origin, [typing.Type[int]]))" + _BUILD
    ),
    "in-a-list-a-library-made": (
        "import typing, string\nt = list(map(typing.get_origin, [typing.Type[int]]))[0]" + _BUILD
    ),
    "in-a-nested-tuple": (
        "import typing, string\nt = tuple(zip(map(typing.get_origin, [typing.Type[int]])))[0][0]"
        + _BUILD
    ),
    "a-method-return": (
        "import typing, string\nf = {'k': typing.get_origin}.get('k')\n"
        "t = f(typing.Type[int])" + _BUILD
    ),
    "min-of-metaclasses": (
        "import typing, string\nt = min([typing.Type[int]], key=str)\nt = typing.get_origin(t)"
        + _BUILD
    ),
    "for-over-a-map": (
        "import typing, string\nfor t in map(typing.get_origin, [typing.Type[int]]):"
        + _BUILD.replace("\n", "\n    ")
    ),
    "comprehension-over-a-map": (
        "import typing, string\nt = [o for o in map(typing.get_origin, [typing.Type[int]])][0]"
        + _BUILD
    ),
    "unpacked-from-a-map": (
        "import typing, string\nt, = map(typing.get_origin, [typing.Type[int]])" + _BUILD
    ),
    "callable-iterator": (
        "import typing, string, functools\n"
        "for t in iter(functools.partial(typing.get_origin, typing.Type[int]), None):"
        + _BUILD.replace("\n", "\n    ")
        + "\n    break"
    ),
    "in-a-dict": (
        "import typing, string\nt = dict(zip('k', map(typing.get_origin, [typing.Type[int]])))['k']"
        + _BUILD
    ),
    "functools-reduce": (
        "import typing, string, functools\n"
        "t = functools.reduce(lambda a, b: typing.get_origin(b), [typing.Type[int]], 0)" + _BUILD
    ),
}


@pytest.mark.parametrize("attack", list(ATTACKS), ids=list(ATTACKS))
def test_no_metaclass_reaches_the_code(restricted_box: BoxFactory, attack: str) -> None:
    box = restricted_box()
    box.assert_refused(ATTACKS[attack], "GuardError", "metaclass")
    box.assert_usable()


def test_typing_helpers_still_answer_with_aliases_and_classes(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    outcome = box.run(
        "import typing\nprint(typing.get_origin(typing.List[int]) is list, "
        "typing.get_args(typing.Dict[str, int]))"
    )
    assert outcome.stdout == "True (<class 'str'>, <class 'int'>)\n", outcome.text
