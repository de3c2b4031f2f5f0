"""Wrappers for stdlib callables whose plain form would change host state or escape the budget."""

from __future__ import annotations

import contextlib
import enum
import functools
import types
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from safeexec.restricted.budget import _counted_producer
from safeexec.restricted.class_facts import is_class, is_instance, module_of, own_dict
from safeexec.restricted.copy_view import (
    dataclass_fields,
    is_dataclass,
    safe_asdict,
    safe_astuple,
    safe_copy,
    safe_deepcopy,
    safe_replace,
)
from safeexec.restricted.enum_view import sandbox_enum_base
from safeexec.restricted.guards import CLASS_LIKE, GuardError, RuntimeClass

if TYPE_CHECKING:
    from safeexec.restricted.cell import Cell


def _wrap_dataclass(cell: Cell, dataclass: Callable[..., object]) -> object:
    """``dataclass`` keeping the result an own class (``slots=True`` makes a new one)."""

    def wrapped(cls: object = None, /, **kwargs: object) -> object:
        def apply(target: object) -> object:
            if not (is_class(target) and target in cell.guards.own_classes):
                raise GuardError("dataclass() applies only to classes defined by the code")
            return cell.guards.register_class(dataclass(target, **kwargs))

        return apply if cls is None else apply(cls)

    return wrapped


def _own_only(cell: Cell, decorator: Callable[..., object]) -> object:
    """A host helper that changes its argument (``total_ordering``): own classes only."""

    def wrapped(target: object) -> object:
        if not cell.guards.is_own(target) or not is_class(target):
            raise GuardError("this decorator applies only to classes defined by the code")
        return decorator(target)

    return wrapped


def _checked_partial(cell: Cell, partial: type) -> object:
    """``functools.partial`` whose calls hand back only what a call in the code may (never a
    metaclass, ``Guards.returned``). Host code calls what the code gives it (a ``defaultdict``'s
    factory, a dataclass field's ``default_factory``) and the result reaches the code by a
    subscript or a read, past the check on the code's own calls; a partial is how the code turns
    a host helper and arguments of its choosing into such a callable
    (``partial(typing.get_origin, typing.Type[int])`` made the real ``type``)."""

    class CheckedPartial(partial, metaclass=RuntimeClass):
        __slots__ = ()

        def __call__(self, /, *args: object, **kwargs: object) -> object:
            return cell.guards.returned(super().__call__(*args, **kwargs))

    type.__setattr__(CheckedPartial, "__module__", "functools")
    type.__setattr__(CheckedPartial, "__name__", "partial")
    type.__setattr__(CheckedPartial, "__qualname__", "partial")
    return CheckedPartial


def _refuse_class(helper: str, target: object) -> None:
    if is_instance(target, CLASS_LIKE):
        raise GuardError(
            f"{helper} applies to functions in restricted mode, not to classes: it would copy "
            "the class's methods, unbound, onto the wrapper"
        )


def _functions_only(cell: Cell, helper: Callable[..., Any]) -> object:
    """A decorator built on ``update_wrapper`` (``functools.cache``, ``lru_cache``) copies the
    wrapped object's ``__dict__`` onto its wrapper: for a class, every method of it without its
    receiver (``cache(ChainMap).clear``). Functions only, used bare or with options
    (``lru_cache(maxsize=32)``)."""
    name = f"functools.{helper.__qualname__}"  # the views it serves are functools's

    def wrapped(*args: object, **kwargs: object) -> object:
        if args and callable(args[0]):
            _refuse_class(name, args[0])
            return helper(*args, **kwargs)
        decorator = helper(*args, **kwargs)

        def apply(target: object) -> object:
            _refuse_class(name, target)
            return decorator(target)

        return apply

    return wrapped


class _FunctionContextManager(contextlib._GeneratorContextManager):
    """What a ``contextmanager`` function returns. Used as a decorator (``@managed()``) it
    takes functions only: on a class, ``ContextDecorator.__call__``'s ``update_wrapper`` would
    copy the class's methods, unbound, onto the wrapper (``g()(Counter).copy``)."""

    def __call__(self, func: Any) -> Any:
        _refuse_class("a contextmanager used as a decorator", func)
        return super().__call__(func)


def _wrap_contextmanager(cell: Cell, contextmanager: Callable[..., Any]) -> object:
    """``contextlib.contextmanager`` of functions, whose context managers decorate functions
    only (see ``_functions_only`` and ``_FunctionContextManager``)."""

    def wrapped(func: Any) -> object:
        _refuse_class("contextlib.contextmanager", func)

        @functools.wraps(func)
        def helper(*args: object, **kwargs: object) -> object:
            return _FunctionContextManager(func, args, kwargs)

        return helper

    return wrapped


def _stop_aware(cell: Cell, manager: type[Any]) -> object:
    """``suppress`` and ``ExitStack`` (whose pushed callbacks may return True): host code that
    swallows what a ``with`` body raised. When it would, the runtime's stop check comes first,
    as in a handler the code wrote (``_caught_``): a stopped thread's signal, or the closed
    budget between cells, is never swallowed."""
    check = cell.threads.check

    class StopAware(manager):
        def __exit__(self, *exc_info: Any) -> bool:
            suppressed = bool(super().__exit__(*exc_info))
            if suppressed:
                check()
            return suppressed

    StopAware.__name__ = StopAware.__qualname__ = manager.__name__
    StopAware.__module__ = module_of(manager)  # type: ignore[assignment]
    return StopAware


def _wrap_wraps(cell: Cell, wraps: Callable[..., Any]) -> object:
    """``functools.wraps`` that only ever writes the standard attributes, to functions the code
    defined: ``assigned``/``updated`` would make ``update_wrapper`` (host code) read and merge
    attribute names the code chose (``updated=("__globals__",)`` merges a module's globals into
    the sandbox's namespace)."""

    def wrapped(original: object, *args: object, **kwargs: object) -> object:
        if args or kwargs:
            raise GuardError(
                "functools.wraps takes only the wrapped function in restricted mode: "
                "assigned= and updated= are fixed"
            )

        _refuse_class("functools.wraps", original)

        def apply(wrapper: object) -> object:
            if not cell.guards.is_own_function(wrapper):
                raise GuardError("functools.wraps applies only to functions defined by the code")
            return wraps(original)(wrapper)

        return apply

    return wrapped


def _wrap_abstractmethod(cell: Cell, abstractmethod: Callable[..., Any]) -> object:
    """``abc.abstractmethod`` sets ``__isabstractmethod__`` on its argument: own functions (or
    ``classmethod``/``staticmethod``/``property`` of them) only, never a host object."""

    def wrapped(funcobj: object) -> object:
        inner = funcobj
        if is_instance(funcobj, (classmethod, staticmethod)):
            inner = funcobj.__func__  # type: ignore[attr-defined]
        elif is_instance(funcobj, property):
            inner = funcobj.fget  # type: ignore[attr-defined]
        if not cell.guards.is_own_function(inner):
            raise GuardError("abc.abstractmethod applies only to functions defined by the code")
        return abstractmethod(funcobj)

    return wrapped


def _wrap_namedtuple(cell: Cell, namedtuple: Callable[..., object]) -> object:
    def wrapped(typename: str, field_names: object, **kwargs: object) -> object:
        kwargs.pop("module", None)
        return cell.guards.register_class(
            namedtuple(typename, field_names, module="__sandbox__", **kwargs)
        )

    return wrapped


def _copy_function(cell: Cell, real: Callable[..., object]) -> object:
    """``copy.copy``/``deepcopy`` as ``copy_view`` has them (the copy protocol's writes go only
    to a new object of the copied type)."""
    return safe_copy if real.__name__ == "copy" else safe_deepcopy


def _dataclass_export(cell: Cell, real: Callable[..., object]) -> object:
    """``dataclasses.asdict``/``astuple`` on ``copy_view``'s deep copy, own dataclasses only."""
    helper = safe_asdict if real.__name__ == "asdict" else safe_astuple
    is_own = cell.guards.is_own

    def export(obj: object, **factory: Callable[[Any], Any]) -> object:
        return helper(is_own, obj, **factory)

    export.__name__ = export.__qualname__ = real.__name__
    return export


def _dataclass_table_reader(cell: Cell, real: Callable[..., object]) -> object:
    """``dataclasses.fields``/``replace``/``is_dataclass``, reading the field table off the class
    by ``type``'s descriptors (never off the instance) and for own dataclasses only
    (``copy_view.dataclass_fields``)."""
    is_own = cell.guards.is_own
    if real.__name__ == "is_dataclass":
        return is_dataclass

    def fields(class_or_instance: object) -> object:
        return dataclass_fields(is_own, class_or_instance)

    def replace(obj: object, /, **changes: Any) -> object:
        return safe_replace(is_own, obj, **changes)

    reader = fields if real.__name__ == "fields" else replace
    reader.__doc__ = real.__doc__
    return reader


def _wrap_pprint(cell: Cell, pprint: Callable[..., object]) -> object:
    """``pprint.pprint`` and ``pprint.pp`` writing to the cell's output, not the process's
    stdout (``pp`` sorts no dicts unless asked, as the real one)."""
    sort_default = pprint.__name__ != "pp"

    def wrapped(obj: object, *args: object, **kwargs: object) -> None:
        import pprint as pprint_module

        kwargs.setdefault("sort_dicts", sort_default)
        cell.sink.write(pprint_module.pformat(obj, *args, **kwargs) + "\n")  # type: ignore[arg-type]

    return wrapped


def _wrap_sleep(cell: Cell, sleep: Callable[[float], None]) -> object:
    """``time.sleep`` in slices, so a stopped budget ends the sleep too."""

    def wrapped(seconds: float) -> None:
        import time

        end = time.monotonic() + float(seconds)
        budget = cell.budget
        while (left := end - time.monotonic()) > 0:
            if budget.exhausted:
                next(budget.counter)
            sleep(min(left, 0.05))

    return wrapped


def _freeze_text_wrapper(cell: Cell, wrapper: type) -> object:
    """``TextWrapper`` with its class-level translation table made read-only.

    The table is a dict every ``TextWrapper`` of the process shares; an item store on it
    (``TextWrapper.unicode_whitespace_trans[32] = 88``) would change ``textwrap`` for the host.
    The table is frozen on the class itself, not on a subclass: ``super()`` reaches base classes.
    """
    table = own_dict(wrapper).get("unicode_whitespace_trans")
    if type(table) is dict:
        wrapper.unicode_whitespace_trans = types.MappingProxyType(dict(table))  # type: ignore[attr-defined]
    return wrapper


# The settings of a ``decimal`` context: every instance the code can reach is its own
# (``localcontext()`` copies the current context; ``getcontext`` and ``DefaultContext`` are not
# in the view), and each setting is a setter the class validates itself.
_DECIMAL_CONTEXT_SETTINGS = frozenset({"prec", "rounding", "Emin", "Emax", "capitals", "clamp"})


def _decimal_contexts(cell: Cell, value: object) -> object:
    """``decimal.Context``/``localcontext``, with the contexts' settings writable."""
    import decimal

    cell.guards.writable_attributes[decimal.Context] = _DECIMAL_CONTEXT_SETTINGS
    return value


def _checked_enum_base(cell: Cell, base: type[enum.Enum]) -> object:
    """``enum.Enum`` and the other memberless bases: stand-ins whose functional API takes
    public member names only (see ``enum_view``)."""
    return sandbox_enum_base(base)


def _warmed(cell: Cell, codec: Callable[[bytes], object]) -> object:
    """A ``base64`` codec whose lookup tables are built now: the module builds them into its
    globals on first use, which would be sandboxed code writing host module state."""
    codec(b"")
    return codec


_SPECIAL_VALUES: Mapping[str, Callable[[Cell, Any], object]] = {
    **{
        f"itertools.{name}": _counted_producer
        for name in (
            "count",
            "cycle",
            "repeat",
            "product",
            "permutations",
            "combinations",
            "combinations_with_replacement",
        )
    },
    "textwrap.TextWrapper": _freeze_text_wrapper,
    "dataclasses.dataclass": _wrap_dataclass,
    "collections.namedtuple": _wrap_namedtuple,
    "pprint.pprint": _wrap_pprint,
    "pprint.pp": _wrap_pprint,
    **{f"base64.{name}": _warmed for name in ("a85encode", "b85encode", "b85decode")},
    "time.sleep": _wrap_sleep,
    "copy.copy": _copy_function,
    "copy.deepcopy": _copy_function,
    "dataclasses.asdict": _dataclass_export,
    "dataclasses.astuple": _dataclass_export,
    **{
        f"dataclasses.{name}": _dataclass_table_reader
        for name in ("fields", "replace", "is_dataclass")
    },
    "functools.total_ordering": _own_only,
    "functools.wraps": _wrap_wraps,
    "functools.partial": _checked_partial,
    "functools.cache": _functions_only,
    "functools.lru_cache": _functions_only,
    "contextlib.contextmanager": _wrap_contextmanager,
    "contextlib.suppress": _stop_aware,
    "contextlib.ExitStack": _stop_aware,
    "abc.abstractmethod": _wrap_abstractmethod,
    **{
        f"enum.{name}": _checked_enum_base
        for name in ("Enum", "IntEnum", "Flag", "IntFlag", "StrEnum")
    },
    "uuid.Enum": _checked_enum_base,
    "decimal.Context": _decimal_contexts,
    "decimal.localcontext": _decimal_contexts,
}
