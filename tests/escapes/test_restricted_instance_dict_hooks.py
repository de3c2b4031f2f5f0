"""Hooks planted through an own instance's ``__dict__``, and the copy protocol as a write gadget.

Host library code looks some hooks up on the *instance* (``copy`` asks ``x.__reduce_ex__``) and
then does what the hook says: ``copy._reconstruct`` calls ``func(*args)`` and runs ``setattr``
and item stores on the result, past the write guard. So no path may put a dunder into an own
instance's attributes: ``vars(obj)`` and ``obj.__dict__`` hand out a copy whose changes reach
the object through the write guard, and a class whose body binds a dunder outside the allowed
set (a slot named ``__reduce_ex__``) is refused. ``copy.deepcopy``'s ``memo`` would hand back
what the copy kept alive (a library object's real ``__dict__``), so it is refused too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory

# The planted hook and its target: a library class every session in the process shares.
_GADGET = """
import copy, dataclasses, json
K = ''.join(['__reduce', '_ex__'])
called = []
def red(proto):
    called.append(proto)
    return (lambda o: o, (json.JSONEncoder,), (None, {'item_separator': ' PWNED '}))
class G:
    pass
g = G()
"""

_CONSUMERS = {
    "copy": "copy.copy(g)",
    "deepcopy": "copy.deepcopy(g)",
    "asdict": ("@dataclasses.dataclass\nclass Box:\n    item: object\ndataclasses.asdict(Box(g))"),
}

_PLANTS = {
    "vars-item": "vars(g)[K] = red",
    "dict-item": "g.__dict__[K] = red",
    "update": "vars(g).update({K: red})",
    "update-keywords": "vars(g).update(**{K: red})",
    "setdefault": "vars(g).setdefault(K, red)",
    "in-place-or": "d = vars(g)\nd |= {K: red}",
    "unbound-update": "dict.update(vars(g), {K: red})",
    "unbound-setdefault": "dict.setdefault(g.__dict__, K, red)",
    "held-across-cells": "d = g.__dict__\nd[K] = red",
}


@pytest.mark.parametrize("consumer", sorted(_CONSUMERS))
@pytest.mark.parametrize("plant", sorted(_PLANTS))
def test_a_dunder_never_reaches_an_own_instance(
    restricted_box: BoxFactory, plant: str, consumer: str
) -> None:
    box = restricted_box(imports=("copy", "dataclasses", "json"))
    code = "\n".join(
        [
            _GADGET,
            "try:",
            *(f"    {line}" for line in _PLANTS[plant].splitlines()),
            "except Exception as e:",
            "    print('plant refused:', type(e).__name__)",
            "try:",
            *(f"    {line}" for line in _CONSUMERS[consumer].splitlines()),
            "except Exception as e:",
            "    print('copy refused:', type(e).__name__)",
            "print('hook ran:', bool(called))",
            "print(json.dumps([1, 2]))",
        ]
    )
    outcome = box.run(code)
    assert "hook ran: False" in outcome.stdout, outcome.text
    assert "[1, 2]" in outcome.stdout and "PWNED" not in outcome.text, outcome.text
    box.assert_usable()


@pytest.mark.parametrize(
    "body",
    [
        "__slots__ = ('__reduce_ex__',)",
        "__slots__ = ['__deepcopy__', 'x']",
        "__slots__ = '__setstate__'",
    ],
)
def test_a_class_binding_a_foreign_dunder_is_refused(restricted_box: BoxFactory, body: str) -> None:
    box = restricted_box()
    box.assert_refused(f"class G:\n    {body}\n", "GuardError")
    box.assert_usable()


def test_the_deepcopy_memo_is_refused(restricted_box: BoxFactory) -> None:
    box = restricted_box(imports=("copy", "calendar"))
    box.assert_refused(
        "import copy, calendar\nm = {}\ncopy.deepcopy(calendar.day_name, m)\nprint(m)\n",
        "GuardError",
        "memo",
    )
    outcome = box.run("import calendar\nprint(calendar.day_name[0])")
    assert outcome.stdout == "Monday\n", outcome.text


def test_instance_attributes_through_vars_still_behave_like_a_dict(
    restricted_box: BoxFactory,
) -> None:
    box = restricted_box(imports=("copy", "json"))
    code = """
import copy, json
class Config:
    def __init__(self, **options):
        self.__dict__.update(options)
c = Config(name='x', size=3)
d = vars(c)
d['size'] = 4
d.setdefault('_note', 'private names are the code\\'s own')
del d['name']
print(c.size, c._note, hasattr(c, 'name'))
print(json.dumps(c.__dict__, sort_keys=True))
print(sorted(vars(c)), dict(vars(c)) == c.__dict__, 'size' in vars(c))
print(copy.deepcopy(vars(c)) == vars(c), type(copy.copy(vars(c))).__name__)
vars(c).pop('size')
print(vars(c), {**vars(c)})
try:
    vars(c)[1] = 2
except Exception as e:
    print('refused', type(e).__name__)
"""
    outcome = box.run(code)
    note = "{'_note': \"private names are the code's own\"}"
    assert outcome.stdout.splitlines() == [
        "4 private names are the code's own False",
        '{"_note": "private names are the code\'s own", "size": 4}',
        "['_note', 'size'] True True",
        "True dict",
        f"{note} {note}",
        "refused GuardError",
    ], outcome.text


@pytest.mark.parametrize(
    "read",
    [
        "class E(enum.Enum):\n    A = 1\nE._new_member_",
        "class E(enum.IntEnum):\n    A = 1\nE.A._new_member_",
        "class E(str, enum.Enum):\n    A = 'a'\ngetattr(E, '_new_' + 'member_')",
        "class E(enum.Flag):\n    A = 1\nE.__dict__",
    ],
)
def test_no_read_hands_out_a_raw_new(restricted_box: BoxFactory, read: str) -> None:
    """A type's raw ``__new__`` (``object.__new__``) makes an instance of any class without its
    ``__init__``, a runtime object too; an own Enum holds one under ``_new_member_``."""
    box = restricted_box(imports=("enum",))
    box.assert_refused(f"import enum\n{read}\n", "GuardError")
    outcome = box.run(
        "import enum\nclass E(enum.Enum):\n    A = 1\n    B = 2\n"
        "print(E(2).name, [m.value for m in E], E.A._value_, E._member_names_)"
    )
    assert outcome.stdout == "B [1, 2] 1 ['A', 'B']\n", outcome.text


def test_a_decimal_context_left_open_ends_with_its_cell(restricted_box: BoxFactory) -> None:
    """An entered ``localcontext()`` that is never left must not become the thread's context:
    in-process, that thread is the host's."""
    box = restricted_box(imports=("contextlib", "decimal"))
    outcome = box.run(
        "import contextlib, decimal\nstack = contextlib.ExitStack()\n"
        "ctx = stack.enter_context(decimal.localcontext())\nctx.prec = 3\n"
        "print(decimal.Decimal(1) / decimal.Decimal(3))"
    )
    assert outcome.stdout == "0.333\n", outcome.text
    outcome = box.run("import decimal\nprint(decimal.Decimal(1) / decimal.Decimal(3))")
    assert outcome.stdout == "0.3333333333333333333333333333\n", outcome.text


@pytest.mark.parametrize(
    "call",
    [
        "enum.Enum('E', [('A', 1), (K, red), (''.join(['__co', 'py__']), None)])",
        "enum.IntEnum('E', {'A': 1, K: red})",
        "enum.StrEnum('E', 'A ' + K)",
        "enum.Flag('E', [('A', 1), ('_hidden_', 2)])",
        "class Base(enum.Enum):\n    pass\nBase('E', [('A', 1), (K, red)])",
        "enum.Enum('E', [('A', 'x'), (''.join(['__e', 'q__']), lambda s, o: True)], type=str)",
    ],
)
def test_the_enum_functional_api_takes_public_names_only(
    restricted_box: BoxFactory, call: str
) -> None:
    """The functional API makes data into class attributes: a member name like
    ``__reduce_ex__`` would be a hook of a class ``copy`` obeys."""
    box = restricted_box(imports=("copy", "dataclasses", "enum", "json"))
    box.assert_refused(f"import enum\n{_GADGET}\n{call}\n", "GuardError")
    outcome = box.run(
        "import enum\nColor = enum.Enum('Color', 'RED GREEN')\n"
        "Size = enum.IntEnum('Size', {'S': 1, 'L': 3})\n"
        "class Mode(enum.Flag):\n    R = 1\n    W = 2\n"
        "print(list(Color), Size(3).name, Size.L > Size.S, Mode.R | Mode.W,\n"
        "      isinstance(Color.RED, enum.Enum), isinstance(Size.S, enum.Enum),\n"
        "      issubclass(Mode, enum.Enum), isinstance(1, enum.Enum))"
    )
    assert outcome.stdout == (
        "[<Color.RED: 1>, <Color.GREEN: 2>] L True Mode.R|W True True True False\n"
    ), outcome.text


@pytest.mark.parametrize(
    "body",
    [
        "class S(str):\n    def __eq__(self, other):\n        return True\n",
        "import collections\nclass S(collections.UserString, str):\n    pass\n",
        "class B(bytes):\n    def __eq__(self, other):\n        return True\n",
        "class I(int):\n    def __eq__(self, other):\n        return True\n",
        "class T(tuple):\n    def __eq__(self, other):\n        return True\n",
    ],
)
def test_a_builtin_value_subclass_cannot_lie_about_equality(
    restricted_box: BoxFactory, body: str
) -> None:
    """Such a value could take another's place as the key of a process-wide cache
    (``struct``'s compiled formats, which the host's own ``openat2`` call once read)."""
    box = restricted_box(imports=("collections", "enum"))
    box.assert_refused(body, "GuardError", "__eq__")
    outcome = box.run(
        "import enum\nclass C(str, enum.Enum):\n    A = 'a'\n"
        "class Name(str):\n    def shout(self):\n        return self.upper()\n"
        "print(C.A == 'a', Name('x').shout(), Name('x') == 'x')"
    )
    assert outcome.stdout == "True X True\n", outcome.text


def test_the_enum_functional_api_reads_its_names_once(restricted_box: BoxFactory) -> None:
    """An iterable the code wrote may answer differently when read again: the names that are
    checked are the names the class gets."""
    box = restricted_box(imports=("copy", "dataclasses", "enum", "json"))
    code = f"""import enum
{_GADGET}
class Names:
    def __init__(self):
        self.reads = 0
    def __iter__(self):
        self.reads += 1
        return iter([('A', 1)] if self.reads == 1 else [('A', 1), (K, red)])
E = enum.Enum('E', Names())
copy.copy(E.A)
print(list(E), 'hook ran:', bool(called))
"""
    outcome = box.run(code)
    assert outcome.stdout == "[<E.A: 1>] hook ran: False\n", outcome.text


@pytest.mark.parametrize(
    "body",
    [
        # typing's alias forwards attribute writes to its __origin__: any object.
        "import typing\nclass Fwd(type(typing.List[int]), _root=True):\n    pass\n",
        "import typing\nclass Fwd(type(typing.List[int]), **{'_' + 'root': True}):\n    pass\n",
        "import typing\nclass Fwd(type(typing.List[int])):\n    pass\n",
        # Any library class's Python-level attribute hook is refused, not only typing's.
        "import uuid\nclass U(uuid.UUID):\n    pass\n",
    ],
)
def test_an_own_class_inherits_no_library_attribute_hook(
    restricted_box: BoxFactory, body: str
) -> None:
    box = restricted_box(imports=("typing", "uuid"))
    box.assert_refused(body, "Error")
    box.assert_usable()


def test_a_class_made_at_run_time_is_never_a_builtin(restricted_box: BoxFactory) -> None:
    """Dunders read off a builtin class skip the receiver check; ``module="builtins"`` given to
    a factory must not make a class one (its host-made ``__init__`` would then write anywhere)."""
    box = restricted_box(imports=("dataclasses", "enum"))
    code = """import dataclasses, enum
@dataclasses.dataclass
class D:
    target: object
X = enum.Enum('X', [], type=D, module='builtins')
print(repr(X))
X.__init__
"""
    outcome = box.assert_refused(code, "GuardError", "__init__")
    assert outcome.stdout == "<enum 'X'>\n", outcome.text
    outcome = box.run("print(int.__add__(1, 2), str.__len__('ab'))")
    assert outcome.stdout == "3 2\n", outcome.text


def test_an_own_abc_registers_own_classes_only(restricted_box: BoxFactory) -> None:
    """``isinstance`` answers from an ABC's registry: a registered generator type would pass for
    the own class, whose class pattern then reads ``gi_frame`` off a generator."""
    box = restricted_box(imports=("abc", "dataclasses", "json", "numbers"))
    for target in ("type(x for x in [1])", "json.JSONEncoder", "int"):
        box.assert_refused(
            f"import dataclasses, json, numbers\n@dataclasses.dataclass\nclass G(numbers.Number):\n"
            f"    item: object\nG.register({target})\n",
            "GuardError",
            "register",
        )
    outcome = box.run(
        "import abc\nclass Shape(abc.ABC):\n    pass\nclass Square:\n    pass\n"
        "Shape.register(Square)\nprint(isinstance(Square(), Shape), issubclass(Square, Shape))"
    )
    assert outcome.stdout == "True True\n", outcome.text


def test_a_host_made_method_checks_its_receiver_by_its_real_class(
    restricted_box: BoxFactory,
) -> None:
    """A registered class passes ``isinstance`` but is no subclass: a dataclass ``__init__``
    read off the class takes only real instances."""
    box = restricted_box(imports=("abc", "dataclasses"))
    code = """import abc, dataclasses
@dataclasses.dataclass
class D(abc.ABC):
    item: object
class Other:
    pass
D.register(Other)
D.__init__(Other(), 1)
"""
    box.assert_refused(code, "GuardError", "takes an instance of")


@pytest.mark.parametrize("field", ["gi_frame", "f_globals", "_secret", "tofile"])
def test_a_class_pattern_reads_only_names_the_code_could_read(
    restricted_box: BoxFactory, field: str
) -> None:
    """Positional sub-patterns read the fields ``__match_args__`` names with the interpreter's
    own ``getattr``; a field named like a frame link or a private name is refused."""
    box = restricted_box(imports=("collections", "dataclasses"))
    code = f"""import dataclasses
@dataclasses.dataclass
class D:
    {field}: object
match D(1):
    case D(value):
        print(value)
"""
    box.assert_refused(code, "GuardError", field)
    outcome = box.run(
        "import dataclasses, collections\n@dataclasses.dataclass\nclass P:\n"
        "    x: int\n    y: int\n"
        "Pair = collections.namedtuple('Pair', 'a b')\n"
        "for subject in (P(1, 2), Pair(3, 4), 5):\n    match subject:\n"
        "        case P(x, y):\n            print('P', x, y)\n"
        "        case Pair(a, b):\n            print('Pair', a, b)\n"
        "        case int(n):\n            print('int', n)\n"
    )
    assert outcome.stdout == "P 1 2\nPair 3 4\nint 5\n", outcome.text


def test_a_class_pattern_matches_on_what_was_checked_not_on_what_a_guard_changed(
    restricted_box: BoxFactory,
) -> None:
    """Code runs between the check and the match (the subject, earlier cases' guards): a
    ``dataclass`` applied there adds ``__match_args__`` naming ``format``. The pattern still
    matches with the names checked before the ``match`` (none: a ``str`` matches itself)."""
    box = restricted_box(imports=("dataclasses",))
    code = """import dataclasses
class D(str):
    format: object
def arm():
    dataclasses.dataclass(D, init=False, repr=False, eq=False)
    return False
match D('{0}'):
    case D() if arm():
        pass
    case D(value):
        print(type(value).__name__, value)
"""
    outcome = box.run(code)
    assert outcome.stdout == "D {0}\n", outcome.text


def test_a_class_pattern_tests_the_subject_by_its_real_class(restricted_box: BoxFactory) -> None:
    """A runtime-checkable protocol answers ``isinstance`` for anything with the attributes it
    lists (a generator has ``gi_frame``); a class pattern asks the subject's real class."""
    box = restricted_box(imports=("dataclasses", "typing"))
    code = """import dataclasses, typing
@typing.runtime_checkable
class G(typing.Protocol):
    gi_frame: object
@dataclasses.dataclass
class H:
    x: int
g = (x for x in [1, 2])
print(isinstance(g, G))
match g:
    case G(x):
        print('matched', x)
    case _:
        print('no match')
match H(7):
    case H(x):
        print('own', x)
"""
    outcome = box.run(code)
    assert outcome.stdout == "True\nno match\nown 7\n", outcome.text


def test_a_private_name_a_library_class_supplies_is_not_the_code_s_own(
    restricted_box: BoxFactory,
) -> None:
    """An own base defining the same name does not make the library's method the code's."""
    box = restricted_box(imports=("collections",))
    code = """import collections
class Own:
    _keep_positive = None
class Y(collections.Counter, Own):
    pass
Y()._keep_positive
"""
    box.assert_refused(code, "GuardError", "_keep_positive")
