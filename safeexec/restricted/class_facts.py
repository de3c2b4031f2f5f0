"""Class facts by construction: the one place the guards learn what a class or an object is.

Every fact is read through ``type``'s own C-level descriptors (``type.__dict__["__mro__"]``,
``__flags__``, ``__module__``, ``__dict__``) or the one-argument ``type()``, never by attribute
lookup on the class or the instance: a metaclass can answer ``cls.__mro__``, ``cls.__module__``
or ``isinstance`` (its ``__instancecheck__``) with whatever it likes, and an instance can answer
``obj.__class__``. ``issubclass`` is used only where the interpreter answers it from the real
MRO (a class whose metaclass is exactly ``type``: no ``__subclasscheck__`` of its own).

``tests/restricted/test_class_facts.py`` fails if a guard module reads such a fact another way.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import TypeGuard

__all__ = [
    "HEAP_TYPE",
    "flags",
    "function_globals",
    "generator_globals",
    "instance_dict",
    "is_class",
    "is_heap_type",
    "is_instance",
    "is_metaclass",
    "is_subclass",
    "lookup",
    "module_of",
    "mro",
    "name_of",
    "own_dict",
    "super_self",
    "super_self_class",
    "super_thisclass",
]

_TYPE_SLOTS = type.__dict__
_MRO = _TYPE_SLOTS["__mro__"].__get__
_FLAGS = _TYPE_SLOTS["__flags__"].__get__
_MODULE = _TYPE_SLOTS["__module__"].__get__
_DICT = _TYPE_SLOTS["__dict__"].__get__
_NAME = _TYPE_SLOTS["__name__"].__get__

# ``super``'s and functions' own fields, read through their descriptors.
super_thisclass = super.__dict__["__thisclass__"].__get__
super_self = super.__dict__["__self__"].__get__
super_self_class = super.__dict__["__self_class__"].__get__
function_globals = types.FunctionType.__dict__["__globals__"].__get__
_GI_FRAME = types.GeneratorType.__dict__["gi_frame"].__get__
_F_GLOBALS = types.FrameType.__dict__["f_globals"].__get__


def generator_globals(generator: types.GeneratorType[object, object, object]) -> dict[str, object]:
    """The globals of the code a generator runs (empty once it finished: no frame left)."""
    frame = _GI_FRAME(generator)
    return {} if frame is None else _F_GLOBALS(frame)


HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: made at run time (by a class statement, ``type()``)

ClassInfo = type | tuple[type, ...]


def is_class(obj: object) -> TypeGuard[type]:
    """Is ``obj`` a class (its real type a subclass of ``type``)? ``isinstance(obj, type)``
    would ask ``obj.__class__``, which an object may answer."""
    return issubclass(type(obj), type)


def mro(cls: type) -> tuple[type, ...]:
    """``cls``'s method resolution order, as the interpreter uses it."""
    return _MRO(cls)


def flags(cls: type) -> int:
    """``cls``'s type flags (``Py_TPFLAGS_*``)."""
    return _FLAGS(cls)


def is_heap_type(cls: type) -> bool:
    """Was ``cls`` made at run time (rather than being one of the interpreter's static types)?"""
    return bool(_FLAGS(cls) & HEAP_TYPE)


def module_of(cls: type) -> object:
    """``cls.__module__`` as ``type`` stores it (a static type's from its C name)."""
    return _MODULE(cls)


def name_of(cls: type) -> str:
    """``cls.__name__`` as ``type`` stores it."""
    return _NAME(cls)


def own_dict(cls: type) -> Mapping[str, object]:
    """The namespace ``cls`` itself defines (a read-only view of its real ``__dict__``)."""
    return _DICT(cls)


def is_subclass(cls: type, classinfo: ClassInfo) -> bool:
    """``issubclass(cls, classinfo)`` by the real MRO: a base whose metaclass is not exactly
    ``type`` (an ABC, a protocol) is looked for by identity, never asked."""
    if not is_class(cls):
        return False
    bases = classinfo if type(classinfo) is tuple else (classinfo,)
    for base in bases:
        if type(base) is type:
            if issubclass(cls, base):  # answered from ``cls``'s real MRO (PyType_IsSubtype)
                return True
        elif any(k is base for k in _MRO(cls)):
            return True
    return False


def is_instance(obj: object, classinfo: ClassInfo) -> bool:
    """``isinstance(obj, classinfo)`` by ``obj``'s real type (never ``obj.__class__`` or a
    metaclass's ``__instancecheck__``)."""
    return is_subclass(type(obj), classinfo)


def is_metaclass(obj: object) -> TypeGuard[type]:
    """Is ``obj`` a metaclass: a class whose instances are classes (``type`` or a subclass)?"""
    return is_class(obj) and is_subclass(obj, type)


def lookup(cls: type, name: str) -> tuple[type | None, object]:
    """The class along ``cls``'s real MRO whose own namespace defines ``name``, and the entry
    (``(None, None)`` where none does)."""
    for klass in _MRO(cls):
        namespace = _DICT(klass)
        if name in namespace:
            return klass, namespace[name]
    return None, None


def instance_dict(obj: object) -> dict[str, object] | None:
    """``obj``'s real ``__dict__``, through the interpreter's own ``__dict__`` slot (the first
    along the real MRO); ``None`` if it has none or a class along the way redefines
    ``__dict__`` (a property could hand back anything)."""
    _, entry = lookup(type(obj), "__dict__")
    if type(entry) is not types.GetSetDescriptorType:
        return None
    value = entry.__get__(obj)
    return value if type(value) is dict else None
