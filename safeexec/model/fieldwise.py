"""``==``, hash and repr of frozen value dataclasses, written once for all of them.

``@dataclass(frozen=True)`` compiles the three for every class it decorates (Python 3.11 runs
``exec`` on each method's source); a value type that says ``eq=False, repr=False`` and derives
from :class:`Fieldwise` gets them from here instead, as the decorator would write them: fields
compared as a tuple, only with an instance of the same class, shown as ``Name(field=value, ...)``.
A one-shot ``safeexec run`` imports some eighty dataclasses before its first step and compiled
the three for each. Not for a class with a field that opts out (``field(compare=False)``).
"""

from __future__ import annotations

from typing import cast

from safeexec.model import codec

__all__ = ["Fieldwise"]


class Fieldwise:
    """Mixin of a frozen dataclass (declared ``eq=False, repr=False``): field-wise ``==``, hash
    and repr."""

    __slots__ = ()

    def _field_values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in codec.field_names(type(self)) or ())

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._field_values() == cast(Fieldwise, other)._field_values()

    def __hash__(self) -> int:
        return hash(self._field_values())

    def __repr__(self) -> str:
        names = codec.field_names(type(self)) or ()
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__qualname__}({shown})"
