"""The ``enum`` bases the restricted views hand out: each a memberless subclass of the real one
whose metaclass checks the functional API (``Enum("Color", "RED GREEN")``).

The functional API turns data into class attributes: a member name like ``__reduce_ex__`` or
``__eq__`` would become a hook of a class host code then obeys (``copy`` reconstructs what
``__reduce_ex__`` says; a lying ``__eq__`` on a ``str`` mixin poisons process-wide caches).
Through these bases it takes public member names only, and the class it makes passes the
checks a ``class`` statement's does (:func:`~safeexec.restricted.guards.check_class`).
Each base still answers ``isinstance``/``issubclass`` as the real one does, so a member of an
own ``IntEnum`` is an ``enum.Enum``.
"""

from __future__ import annotations

import enum
import functools
import types
from collections.abc import Mapping
from typing import Any

from safeexec.restricted.class_facts import is_instance, module_of
from safeexec.restricted.guards import GuardError, check_class

__all__ = ["sandbox_enum_base"]


class _CheckedEnumType(enum.EnumType):
    def __call__(cls, value: Any, names: Any = None, **options: Any) -> Any:
        if names is None:
            return super().__call__(value, **options)
        # ``module=`` names where the class claims to come from ("builtins", "safeexec"...),
        # which some checks read: the code's classes come from ``__sandbox__``.
        options["module"] = "__sandbox__"
        made = super().__call__(value, _checked_names(names), **options)
        check_class(made)
        return made

    def __instancecheck__(cls, instance: Any) -> bool:
        return type.__instancecheck__(_REAL.get(cls, cls), instance)

    def __subclasscheck__(cls, subclass: Any) -> bool:
        return type.__subclasscheck__(_REAL.get(cls, cls), subclass)


def _checked_names(names: Any) -> Any:
    """The functional API's ``names``, read once into plain values (an iterable the code wrote
    could answer differently when read again) and checked: exact ``str`` names, none private."""
    plain: Any
    listed: list[Any]
    if type(names) is str:
        plain, listed = names, names.replace(",", " ").split()
    elif is_instance(names, (dict, types.MappingProxyType, Mapping)):  # by MRO, not registry
        plain = dict(names.items())
        listed = list(plain)
    else:
        plain = [item if type(item) is str else tuple(item) for item in names]
        listed = [item if type(item) is str else item[0] for item in plain]
    for name in listed:
        if type(name) is not str or name.startswith("_"):
            raise GuardError(
                f"enum member name {name!r}: the functional API takes public names (str) only "
                "in restricted mode"
            )
    return plain


_REAL: dict[type, type] = {}  # each sandbox base → the real base it stands for


@functools.cache
def sandbox_enum_base(real: type[enum.Enum]) -> type[enum.Enum]:
    """The sandbox's stand-in for the memberless ``enum`` base ``real`` (one per process)."""

    class base(real, metaclass=_CheckedEnumType):  # type: ignore[misc,valid-type]
        pass  # memberless, so the code's own enums can derive from it

    base.__name__ = real.__name__
    base.__module__ = module_of(real)  # type: ignore[assignment]
    base.__qualname__ = real.__qualname__
    _REAL[base] = real
    return base
