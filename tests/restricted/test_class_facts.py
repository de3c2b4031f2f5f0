"""Class facts by construction: the guards read what a class is through ``type``'s own
descriptors (``safeexec.restricted.class_facts``), so a metaclass or an instance that lies about
its MRO, flags, module, ``__match_args__`` or ``isinstance`` answers decides nothing."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import safeexec.restricted as restricted_package
from safeexec.restricted import class_facts
from safeexec.restricted.copy_view import dataclass_fields, safe_deepcopy
from safeexec.restricted.guards import GuardError, Guards

# The modules whose decisions read class facts; ``class_facts`` is the one that may read them.
_GUARD_MODULES = ("guards.py", "copy_view.py", "stdlib_wrappers.py", "enum_view.py")
_FACTS = {"__mro__", "__flags__", "__module__", "__dict__", "__class__", "__bases__", "__base__"}
_ASKING = {"isinstance", "issubclass"}
# Dunder tables and hooks a guard or a helper of the runtime looks up by name.
_TABLES = {"__match_args__", "__dataclass_fields__", "__copy__", "__deepcopy__", "__reduce_ex__"}


def _violations(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in _FACTS:
            own_instance = isinstance(node.value, ast.Name) and node.value.id == "self"
            if isinstance(node.ctx, ast.Load) and not own_instance:
                found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in _ASKING:
                found.append(f"line {node.lineno}: {node.func.id}()")
            elif node.func.id in {"getattr", "hasattr"} and len(node.args) >= 2:
                name = node.args[1]
                if isinstance(name, ast.Constant) and name.value in _FACTS | _TABLES:
                    found.append(f"line {node.lineno}: {node.func.id}(..., {name.value!r})")
    return found


@pytest.mark.parametrize("module", _GUARD_MODULES)
def test_guard_modules_read_class_facts_only_through_class_facts(module: str) -> None:
    source = (Path(restricted_package.__file__).parent / module).read_text()
    assert _violations(source) == [], f"{module} reads class facts by attribute lookup"


def test_the_scan_finds_each_way_of_asking() -> None:
    source = (
        "cls.__mro__\nobj.__class__\nisinstance(x, type)\nissubclass(c, int)\n"
        "getattr(cls, '__match_args__', None)\nk.__dict__['x']\n"
    )
    assert len(_violations(source)) == 6
    assert _violations("self.__dict__['a'] = 1\nC.__module__ = 'm'\n") == []


# -- liars the host could be handed (a library class with a lying metaclass) --------------------


class _LyingMeta(type):
    """Answers every class fact a guard could ask by attribute lookup with a lie."""

    def __getattribute__(cls, name: str) -> object:
        lies = {
            "__flags__": 0,  # "a static type: a builtin"
            "__module__": "builtins",
            "__mro__": (object,),
            "__match_args__": ("__class__",),
        }
        if name in lies:
            return lies[name]
        return type.__getattribute__(cls, name)

    def __instancecheck__(cls, instance: object) -> bool:
        return True

    def __subclasscheck__(cls, subclass: type) -> bool:
        return True


class _Liar(metaclass=_LyingMeta):
    def __init__(self) -> None:
        self.secret = "host"


def test_facts_are_the_interpreters_not_the_metaclasss() -> None:
    assert class_facts.is_heap_type(_Liar)
    assert class_facts.module_of(_Liar) == __name__
    assert class_facts.mro(_Liar) == (_Liar, object)
    assert class_facts.lookup(_Liar, "__match_args__") == (None, None)
    assert not class_facts.is_instance(1, _Liar)
    assert not class_facts.is_subclass(int, _Liar)
    assert class_facts.is_metaclass(_LyingMeta) and not class_facts.is_metaclass(_Liar)


def test_a_lying_class_is_not_a_builtin_to_the_read_guard() -> None:
    # Claimed static and "builtins": a USER_DUNDERS read off a builtin type is allowed.
    with pytest.raises(GuardError, match="not allowed"):
        Guards().getattr_guard(_Liar, "__init__")


def test_a_class_pattern_asks_neither_flags_nor_match_args_of_the_metaclass() -> None:
    # Claimed static, the class would be matched as it is (its metaclass's lies included).
    with pytest.raises(GuardError, match="metaclass '_LyingMeta' was not reviewed"):
        Guards().match_class(_Liar)


class _LyingInstance:
    """An object whose ``__class__`` claims to be a class (as ``weakref.proxy`` of one does)."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return _LyingMeta


def test_an_instance_claiming_to_be_a_class_is_not_one() -> None:
    liar = _LyingInstance()
    assert isinstance(liar, type)  # what the interpreter's isinstance answers
    assert not class_facts.is_class(liar)
    guards = Guards()
    # Not a class: ``type()`` of it is its real type, and no class-only branch is taken.
    assert guards.safe_type(liar) is _LyingInstance
    # Read as an instance's attribute (a host object's: checked, never inline), not a class's.
    assert guards.class_attribute(liar, "__doc__") == _LyingInstance.__doc__
    assert _LyingInstance not in guards.plain_types


# -- dunder tables read off the class, never the instance -----------------------------------------


@dataclasses.dataclass
class _Point:
    x: int = 1


def _plant(obj: object, name: str, value: object) -> None:
    """What a library descriptor writing ``instance.__dict__[name]`` would have done."""
    vars(obj)[name] = value


def test_a_field_table_planted_on_an_instance_is_not_read() -> None:
    point = _Point()
    planted = {"__dict__": dataclasses.field()}
    _plant(point, "__dataclass_fields__", planted)
    fields = dataclass_fields(lambda obj: True, point)
    assert [f.name for f in fields] == ["x"]


def test_a_copy_hook_planted_on_an_instance_is_not_obeyed() -> None:
    point = _Point()
    _plant(point, "__deepcopy__", lambda memo: "host object")
    _plant(point, "__reduce_ex__", lambda protocol: (print, ("obeyed",)))
    copied = safe_deepcopy(point)
    assert type(copied) is _Point and copied.x == 1
