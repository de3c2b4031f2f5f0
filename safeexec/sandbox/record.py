"""Frozen value classes for the modules the template imports, without ``dataclasses``.

A :class:`Record` subclass is what ``@dataclass(frozen=True, slots=True, kw_only=True)`` makes of
it: slotted, keyword-only, frozen, compared, hashed and shown field by field; type checkers see
it as such (``dataclass_transform``). What it skips is the decorator's code generation, some
0.5 ms a class, and the import of ``dataclasses`` with ``inspect``: the template process (and a
one-shot ``safeexec run``, which waits for it) imports the protocol's frames and the sandbox's
values before its first session can start. Fields are the annotations that are not ``ClassVar``;
a subclass must not derive from another record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Self, TypeVar, cast, dataclass_transform

__all__ = ["Record", "default"]

_T = TypeVar("_T")


class _Factory:
    """A field's default made afresh for each record (``default(default_factory=dict)``)."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], object]) -> None:
        self.make = make


def default(*, default_factory: Callable[[], _T]) -> _T:
    """A field default made by calling ``default_factory`` for each record (as ``field()``)."""
    return cast(_T, _Factory(default_factory))


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(default,))
class _RecordType(type):
    """Gives each record class its slots, field names and defaults."""

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> _RecordType:
        annotations: dict[str, object] = namespace.get("__annotations__", {})
        # Strings under ``from __future__ import annotations``, else typing objects.
        fields = tuple(
            n
            for n, a in annotations.items()
            if not str(a).startswith(("ClassVar", "typing.ClassVar"))
        )
        defaults = {n: namespace.pop(n) for n in fields if n in namespace}
        namespace["__slots__"] = fields
        cls = super().__new__(mcs, name, bases, namespace)
        cls._fields = fields  # type: ignore[attr-defined]
        cls._defaults = defaults  # type: ignore[attr-defined]
        return cls


class Record(metaclass=_RecordType):
    """The base of a frozen, slotted, keyword-only value class (see the module's docstring)."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]]
    _defaults: ClassVar[dict[str, object]]

    def __init__(self, **values: object) -> None:
        cls = type(self)
        for name in cls._fields:
            if name in values:
                value = values.pop(name)
            elif name in cls._defaults:
                value = cls._defaults[name]
                if isinstance(value, _Factory):
                    value = value.make()
            else:
                raise TypeError(f"{cls.__name__}() missing keyword argument {name!r}")
            object.__setattr__(self, name, value)
        if values:
            raise TypeError(f"{cls.__name__}() got unexpected keyword arguments {sorted(values)}")

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == cast(Record, other)._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__qualname__}({shown})"

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def replace(self, **changes: object) -> Self:
        """A copy with ``changes`` (what ``dataclasses.replace`` does for a dataclass)."""
        return type(self)(**{**dict(zip(self._fields, self._values(), strict=True)), **changes})
