"""``copy.copy``/``copy.deepcopy`` and ``dataclasses.asdict``/``astuple`` for sandboxed code,
with the copy protocol's write gadget closed.

``copy`` rebuilds an object from what its reducer says: ``y = func(*args)``, then ``setattr``,
``__dict__.update`` and item stores on ``y``, all host code past the write guard. A reducer the
code could steer (a hook planted on an instance or a class) made that a write to any object.
Here the object made must be of the copied object's exact type, which every reducer of the
standard library satisfies; a reducer that hands back anything else (a runtime class, a host
object) is refused before anything is written to it. The deep copy keeps its memo to itself
(its keep-alive list holds originals' real ``__dict__``s) and recurses through itself only, so
no object at any depth reaches the real module's reconstruction. ``dataclasses``' helpers deep
copy through the real ``copy``, so they are built here on this one.
"""

from __future__ import annotations

import copy
import dataclasses
import types
from collections.abc import Callable
from typing import Any

from safeexec.restricted.class_facts import is_class, is_instance, lookup
from safeexec.restricted.guards import GuardError, InstanceAttributes

__all__ = [
    "dataclass_fields",
    "is_dataclass",
    "safe_asdict",
    "safe_astuple",
    "safe_copy",
    "safe_deepcopy",
    "safe_replace",
]

_ATOMIC = copy._deepcopy_atomic  # type: ignore[attr-defined]
_CONTAINERS: dict[type, Callable[..., Any]] = {
    list: copy._deepcopy_list,  # type: ignore[attr-defined]
    tuple: copy._deepcopy_tuple,  # type: ignore[attr-defined]
    dict: copy._deepcopy_dict,  # type: ignore[attr-defined]
}


def safe_copy(x: Any) -> Any:
    """``copy.copy(x)``: as the real one, but a reducer must make an object of ``x``'s type."""
    if type(x) is InstanceAttributes:
        return dict(x)
    cls = type(x)
    copier = copy._copy_dispatch.get(cls)  # type: ignore[attr-defined]
    if copier is not None:
        return copier(x)
    if is_class(x):
        return x
    hook = _class_hook(x, "__copy__")
    if hook is not None:
        return hook()
    rv = _reduce(x)
    return x if type(rv) is str else _reconstruct(x, None, *rv)


def _class_hook(x: Any, name: str) -> Any:
    """The hook ``name`` of ``x``'s class, bound to ``x`` (``None`` where the class has none):
    read off the class by its real MRO, never off the instance, whose real ``__dict__`` must
    not be able to supply a hook (the real ``copy`` asks ``x.__deepcopy__``)."""
    cls = type(x)
    owner, entry = lookup(cls, name)
    if owner is None or entry is None:
        return None
    bind = lookup(type(entry), "__get__")[1]
    return entry if bind is None else bind(entry, x, cls)  # type: ignore[operator]


def safe_deepcopy(x: Any, memo: None = None) -> Any:
    """``copy.deepcopy(x)`` without a caller's ``memo`` (see the module docstring)."""
    if memo is not None:
        raise GuardError("copy.deepcopy takes no memo in restricted mode")
    return _deep(x, {})


def _deep(x: Any, memo: dict[int, Any]) -> Any:
    key = id(x)
    if key in memo:
        return memo[key]
    if type(x) is InstanceAttributes:
        x = dict(x)
    cls = type(x)
    copier = copy._deepcopy_dispatch.get(cls)  # type: ignore[attr-defined]
    if copier is _ATOMIC or is_class(x):
        return x
    if cls in _CONTAINERS:
        y = _CONTAINERS[cls](x, memo, deepcopy=_deep)
    elif cls is types.MethodType:
        y = types.MethodType(x.__func__, _deep(x.__self__, memo))
    elif copier is not None:
        y = copier(x, memo)
    else:
        hook = _class_hook(x, "__deepcopy__")
        if hook is not None:
            y = hook({})  # a memo of its own: never this one, whose entries are originals' copies
        else:
            rv = _reduce(x)
            y = x if type(rv) is str else _reconstruct(x, memo, *rv)
    if y is not x:
        memo[key] = y
        copy._keep_alive(x, memo)  # type: ignore[attr-defined]  # ids stay unique while copying
    return y


def _reduce(x: Any) -> Any:
    reductor = copy.dispatch_table.get(type(x))  # type: ignore[attr-defined]
    if reductor is not None:
        return reductor(x)
    reductor = _class_hook(x, "__reduce_ex__")
    if reductor is not None:
        return reductor(4)
    reductor = _class_hook(x, "__reduce__")
    if reductor is not None:
        return reductor()
    raise copy.Error(f"un(deep)copyable object of type {type(x)}")


def _reconstruct(x: Any, memo: dict[int, Any] | None, func: Any, args: Any, *rest: Any) -> Any:
    """The real reconstruction, on an object checked to be of ``x``'s type before it is made
    anything of (the reducer's ``func`` could hand back any object it can reach)."""

    def make(*made_args: Any) -> Any:
        made = func(*made_args)
        if type(made) is not type(x):
            raise GuardError(
                f"copying a {type(x).__name__!r} would write to a {type(made).__name__!r} its "
                "reducer handed back; restricted mode copies only into a new object of the type"
            )
        return made

    return copy._reconstruct(x, memo, make, args, *rest, deepcopy=_deep)  # type: ignore[attr-defined]


def safe_asdict(
    is_own: Callable[[object], bool], obj: Any, *, dict_factory: Callable[[Any], Any] = dict
) -> Any:
    """``dataclasses.asdict`` of the code's own dataclasses, leaves deep-copied by
    :func:`safe_deepcopy` (``is_own`` says which instances are the code's own: the real one
    reads every field, private ones too, of any dataclass it meets)."""
    _check_dataclass(is_own, obj, "asdict")
    return _inner(is_own, obj, dict_factory)


def safe_astuple(
    is_own: Callable[[object], bool], obj: Any, *, tuple_factory: Callable[[Any], Any] = tuple
) -> Any:
    """``dataclasses.astuple``, as :func:`safe_asdict`."""
    _check_dataclass(is_own, obj, "astuple")
    return _inner(is_own, obj, lambda fields: tuple_factory([value for _, value in fields]))


def _field_table(obj: object) -> object:
    """The dataclass field table of ``obj``'s class (or of ``obj``, a class), read off the class
    by its real MRO: never off the instance, whose real ``__dict__`` the code could have
    planted a table in (the real helpers ask ``obj.__dataclass_fields__``)."""
    cls: type = obj if is_class(obj) else type(obj)
    return lookup(cls, _FIELDS)[1]


def is_dataclass(obj: object) -> bool:
    """``dataclasses.is_dataclass``, answered from the class (see :func:`_field_table`)."""
    return _field_table(obj) is not None


def dataclass_fields(
    is_own: Callable[[object], bool], obj: object
) -> tuple[dataclasses.Field[Any], ...]:
    """``dataclasses.fields`` of the code's own dataclasses (or instances of them), from the
    class's real field table: fields only, each a real ``Field`` named by a public or private
    identifier that is not a dunder (the helpers then read ``getattr(obj, field.name)``)."""
    table = _field_table(obj)
    if table is None:
        raise TypeError("must be called with a dataclass type or instance")
    if not is_own(obj):
        raise GuardError(
            "dataclass helpers apply to dataclasses defined by the code in restricted mode"
        )
    if type(table) is not dict:
        raise GuardError("this dataclass's field table is not the one dataclass() made")
    fields = []
    for field in table.values():
        if type(field) is not dataclasses.Field:
            raise GuardError("this dataclass's field table is not the one dataclass() made")
        name = field.name
        if type(name) is not str or (name.startswith("__") and name.endswith("__")):
            raise GuardError(f"dataclass field name {name!r} is not allowed in restricted mode")
        if field._field_type is _FIELD:  # type: ignore[attr-defined]
            fields.append(field)
    return tuple(fields)


def safe_replace(is_own: Callable[[object], bool], obj: object, /, **changes: Any) -> Any:
    """``dataclasses.replace`` of an own dataclass instance, by the class's real field table
    (see :func:`dataclass_fields`): the fields ``changes`` leaves out are read off ``obj``."""
    if is_class(obj) or not is_dataclass(obj):
        raise TypeError("replace() should be called on dataclass instances")
    dataclass_fields(is_own, obj)  # own, a real table, no dunder names
    table: dict[str, Any] = _field_table(obj)  # type: ignore[assignment]
    for field in table.values():
        if field._field_type is _FIELD_CLASSVAR:
            continue
        if not field.init:
            if field.name in changes:
                raise ValueError(
                    f"field {field.name} is declared with init=False, it cannot be "
                    "specified with replace()"
                )
            continue
        if field.name not in changes:
            if field._field_type is _FIELD_INITVAR and field.default is dataclasses.MISSING:
                raise TypeError(f"InitVar {field.name!r} must be specified with replace()")
            changes[field.name] = getattr(obj, field.name)
    return type(obj)(**changes)


_FIELDS = dataclasses._FIELDS  # type: ignore[attr-defined]
_FIELD = dataclasses._FIELD  # type: ignore[attr-defined]
_FIELD_CLASSVAR = dataclasses._FIELD_CLASSVAR  # type: ignore[attr-defined]
_FIELD_INITVAR = dataclasses._FIELD_INITVAR  # type: ignore[attr-defined]


def _check_dataclass(is_own: Callable[[object], bool], obj: Any, helper: str) -> None:
    if not is_dataclass(obj) or is_class(obj):
        raise TypeError(f"{helper}() should be called on dataclass instances")
    if not is_own(obj):
        raise GuardError(
            f"{helper}() applies to dataclasses defined by the code in restricted mode"
        )


def _inner(is_own: Callable[[object], bool], obj: Any, build: Callable[[Any], Any]) -> Any:
    if is_dataclass(obj) and not is_class(obj):
        _check_dataclass(is_own, obj, "a nested dataclass's")
        fields = [
            (f.name, _inner(is_own, getattr(obj, f.name), build))
            for f in dataclass_fields(is_own, obj)
        ]
        return build(fields)
    if is_instance(obj, tuple) and lookup(type(obj), "_fields")[0] is not None:
        return type(obj)(*[_inner(is_own, value, build) for value in obj])
    if is_instance(obj, (list, tuple)):
        return type(obj)(_inner(is_own, value, build) for value in obj)
    if is_instance(obj, dict):
        return type(obj)(
            (_inner(is_own, k, build), _inner(is_own, v, build)) for k, v in obj.items()
        )
    return _deep(obj, {})
