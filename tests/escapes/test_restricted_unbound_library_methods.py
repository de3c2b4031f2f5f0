"""Library methods read off a class and called with a foreign ``self``.

``collections.Counter.copy`` read off the class is host code that runs on whatever it is handed:
``Counter.copy(OwnClass)`` is ``OwnClass.__class__(OwnClass)``, the metaclass ``type``, which
builds classes past every guard. The class is every way a method reaches the code without its
receiver: a class (library or own subclass), a ``super`` object over a class, a generic alias that
forwards to its class, ``getattr``, a decorator that copies a class's ``__dict__`` onto its
wrapper, the implicit read of an augmented assignment, and the reads of ``match`` patterns. Each
comes back receiver-checked (an instance of the class first) or is refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory

_C = "import collections\nclass C:\n    pass\n"
_K = _C + "class K(collections.Counter):\n    pass\n"
_CATCH = (
    "class G:\n    def __radd__(self, other):\n        global got\n        got = other\n"
    "        return 0\n"
)

ATTACKS = {
    "library-class": (_C + "print(collections.Counter.copy(C))", "GuardError"),
    "own-subclass": (_K + "print(K.copy(C))", "GuardError"),
    "super-over-a-class": (_K + "print(super(K, K).copy(C))", "GuardError"),
    "getattr-builtin": (_C + "print(getattr(collections.Counter, 'copy')(C))", "GuardError"),
    "user-list-on-own-object": (_C + "collections.UserList.append(C(), 1)", "GuardError"),
    "typing-alias": (
        "import typing\nclass C:\n    pass\nprint(typing.Mapping.get(C, 'x'))",
        "GuardError",
    ),
    "parametrised-alias": (
        "import collections.abc\nclass C:\n    pass\n"
        "print(collections.abc.Mapping[str, int].get(C, 'x'))",
        "GuardError",
    ),
    "partial-of-an-unbound-method": (
        _C + "import functools\nprint(functools.partial(collections.Counter.copy, C)())",
        "GuardError",
    ),
    "cache-copies-the-class-dict": (
        _C + "import functools\nprint(functools.cache(collections.Counter).copy(C))",
        "GuardError",
    ),
    "lru-cache-with-options": (
        _C
        + "import functools\nprint(functools.lru_cache(maxsize=4)(collections.ChainMap).copy(C))",
        "GuardError",
    ),
    "contextmanager-copies-the-class-dict": (
        _C + "import contextlib\nprint(contextlib.contextmanager(collections.Counter).copy(C))",
        "GuardError",
    ),
    "contextmanager-instance-decorating-a-class": (
        _C + "import contextlib\n@contextlib.contextmanager\ndef g():\n    yield\n"
        "print(g()(collections.Counter).copy(C))",
        "GuardError",
    ),
    "contextmanager-instance-decorating-an-own-subclass": (
        _K + "import contextlib\n@contextlib.contextmanager\ndef g():\n    yield\n"
        "print(g()(K).copy(C))",
        "GuardError",
    ),
    "own-context-decorator-decorating-a-class": (
        _C + "import contextlib\nclass D(contextlib.ContextDecorator):\n"
        "    def __enter__(self):\n        return self\n"
        "    def __exit__(self, *exc):\n        return False\n"
        "print(D()(collections.Counter).copy(C))",
        "Error",
    ),
    "wraps-a-class": (
        _C + "import functools\n@functools.wraps(collections.Counter)\ndef f():\n    pass\n"
        "print(f.copy(C))",
        "GuardError",
    ),
    "augmented-assignment-public": (_K + _CATCH + "K.copy += G()\nprint(got(C))", "GuardError"),
    "augmented-assignment-inherited-private": (
        "import enum\nclass E(enum.Enum):\n    A = 1\n" + _CATCH + "E._convert_ += G()\n"
        "print([m.value for m in got('X', 'uuid', lambda n: n == 'os')])",
        "GuardError",
    ),
    "augmented-assignment-on-an-expression": (
        _K + _CATCH + "box = [K]\nbox[0].copy += G()\nprint(got(C))",
        "GuardError",
    ),
    "match-keyword-pattern-on-a-class": (
        _C + "match collections.Counter:\n    case object(copy=f):\n        print(f(C))",
        "GuardError",
    ),
    "match-positional-pattern-on-a-class": (
        _C + "match collections.Counter:\n    case object() as o:\n        print(o.copy(C))",
        "GuardError",
    ),
    "match-nested-keyword-pattern": (
        _C + "match [collections.Counter]:\n    case [object(copy=f)]:\n        print(f(C))",
        "SyntaxError",
    ),
    "match-value-pattern-into-own-eq": (
        _C + "class S:\n    def __eq__(self, other):\n        global got\n        got = other\n"
        "        return True\nmatch S():\n    case collections.Counter.copy:\n"
        "        print(got(C))",
        "GuardError",
    ),
    "match-mapping-key-into-own-get": (
        _C + "class M(collections.abc.Mapping):\n"
        "    def __getitem__(self, key):\n        global got\n        got = key\n"
        "        return 1\n"
        "    def __iter__(self):\n        return iter([])\n"
        "    def __len__(self):\n        return 1\n"
        "import collections.abc\nmatch M():\n    case {collections.Counter.copy: 1}:\n"
        "        print(got(C))",
        "GuardError",
    ),
    "class-level-descriptor-object": (
        "import functools\nclass A:\n    @functools.cached_property\n    def x(self):\n"
        "        return 1\nprint(A.x)",
        "GuardError",
    ),
    # C-level methods check their receiver themselves; dunders stay behind the guard.
    "dict-copy-on-a-class": (_C + "print(dict.copy(C))", "TypeError"),
    "list-init-on-a-host-object": (
        "import string\nlist.__init__(string.Template.pattern)",
        "TypeError",
    ),
    "object-reduce-ex": (_C + "print(object.__reduce_ex__(C, 2))", "GuardError"),
    "unbound-str-format": (_C + "print(str.format('{0.__class__}', C))", "GuardError"),
    "subclasses-through-type": ("print(object.__subclasses__())", "GuardError"),
    "descriptor-get-of-a-library-method": (
        _C + "print(collections.Counter.copy.__get__(C)())",
        "GuardError",
    ),
    "template-substitute-on-own-object": (
        "import string\nclass C:\n    template = '$x'\nprint(string.Template.substitute(C(), x=1))",
        "GuardError",
    ),
    "itertools-and-operator-classes": (
        "import itertools, operator\nclass C:\n    pass\n"
        "print(itertools.chain.from_iterable.__self__, operator.itemgetter.__call__(C, 1))",
        "GuardError",
    ),
}


@pytest.mark.parametrize("attack", list(ATTACKS), ids=list(ATTACKS))
def test_unbound_library_method_is_refused(restricted_box: BoxFactory, attack: str) -> None:
    code, fragment = ATTACKS[attack]
    box = restricted_box()
    outcome = box.assert_refused(code, fragment)
    assert "<class 'type'>" not in outcome.stdout and "module" not in outcome.stdout, outcome.text
    box.assert_usable()


def test_methods_with_their_receiver_still_work(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    outcome = box.run(
        "import collections, dataclasses, enum, datetime, functools\n"
        "class K(collections.Counter):\n    made = 0\n    def __init__(self, *a):\n"
        "        super().__init__(*a)\n        K.made += 1\n        self._n = 1\n"
        "        self._n += 2\n"
        "k = K('aab')\n"
        "print(k.most_common(1), K.made, k._n, collections.Counter.most_common(k, 1),"
        " K.copy(k)['a'])\n"
        "print(dict.fromkeys('ab', 0), str.upper('x'), sorted(['b', 'A'], key=str.lower),"
        " datetime.date.fromisoformat('2024-01-02').year)\n"
        "@functools.cache\ndef sq(n):\n    return n * n\n"
        "@functools.lru_cache(maxsize=8)\ndef cube(n):\n    return n ** 3\n"
        "print(sq(4), cube(2))\n"
        "@dataclasses.dataclass\nclass P:\n    x: int\n    y: int = 0\n"
        "class Color(enum.Enum):\n    RED = 1\n"
        "def f(v):\n    match v:\n        case P(x=0, y=y):\n            return y\n"
        "        case Color.RED:\n            return 'red'\n"
        "        case {'k': Color.RED}:\n            return 'map'\n"
        "        case int(n) | str(n):\n            return n\n"
        "print(f(P(0, 5)), f(Color.RED), f({'k': Color.RED}), f(7))\n"
    )
    assert outcome.stdout == (
        "[('a', 2)] 1 3 [('a', 2)] 2\n{'a': 0, 'b': 0} X ['A', 'b'] 2024\n16 8\n5 red map 7\n"
    ), outcome.text


def test_a_contextmanager_still_manages_and_decorates_functions(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    outcome = box.run(
        "import contextlib\nlog = []\n"
        "@contextlib.contextmanager\ndef tag(name):\n    log.append('<' + name)\n    yield name\n"
        "    log.append(name + '>')\n"
        "with tag('a') as got:\n    log.append(got)\n"
        "@tag('b')\ndef f(x):\n    return x * 2\n"
        "print(f(3), log, tag.__name__)"
    )
    assert outcome.stdout.strip() == "6 ['<a', 'a', 'a>', '<b', 'b>'] tag", outcome.text
