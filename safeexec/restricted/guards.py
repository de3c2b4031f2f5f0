"""The run-time hooks transformed code calls (``Guards``), the module views imports hand out, the
safe ``str.format`` and the ``print`` collector."""

from __future__ import annotations

import collections
import functools
import io
import itertools
import string
import sys
import threading
import types
import typing
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Protocol

from safeexec.restricted.allowlist import (
    _ANYWHERE_DUNDERS,
    DENIED_ATTRIBUTES,
    MEDIATED_ATTRIBUTES,
    USER_DUNDERS,
)
from safeexec.restricted.class_facts import (
    function_globals,
    generator_globals,
    instance_dict,
    is_class,
    is_heap_type,
    is_instance,
    is_metaclass,
    is_subclass,
    lookup,
    module_of,
    mro,
    own_dict,
    super_self,
    super_self_class,
    super_thisclass,
)
from safeexec.restricted.derived_views import refusal_reason


class TextSink(Protocol):
    """Where ``print`` output goes: anything with ``write(str)``."""

    def write(self, text: str, /) -> int: ...


class _Denials(threading.local):
    """The refusals of the run in progress in this thread (``current``, set by
    ``RestrictedExecutor.execute``): every refusal goes to the audit log even when the code
    catches it. A nested run saves and restores the outer run's list.

    Per thread rather than a context variable: a run never suspends, so a thread has one run in
    progress at a time (nested ones aside), and a context variable's set and reset cost more
    than the rest of a short run. Threads the code starts record nothing, as before (a new
    thread began with an empty context)."""

    current: list[tuple[str, str]] | None = None


_DENIALS = _Denials()
_MAX_DENIALS = 64


def _record_denial(guard: str, detail: str) -> None:
    denials = _DENIALS.current
    if denials is not None and len(denials) < _MAX_DENIALS:
        denials.append((guard, detail[:300]))


class GuardError(Exception):
    """Sandboxed code tried something the restricted runtime refuses (the message says what)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        _record_denial("guard", message)


class RuntimeClass(type):
    """The metaclass of the runtime's own classes, which the code can name (``type(f)`` of a
    workdir file): once made they take no attribute writes, so whatever write gadget a library
    may yet hold cannot replace a helper the runtime calls with what the code must never see
    (``SqliteConnection._open`` is handed the executor, ``WorkdirFile._wrap`` a real file)."""

    def __setattr__(cls, name: str, value: object) -> None:
        raise GuardError(f"the runtime class {cls.__name__!r} cannot be changed")

    def __delattr__(cls, name: str) -> None:
        raise GuardError(f"the runtime class {cls.__name__!r} cannot be changed")


class SandboxExit(Exception):
    """Sandboxed code raised ``SystemExit``/``KeyboardInterrupt``/``GeneratorExit``; it cannot
    unwind the host, so it ends the cell as an ordinary error."""


class ModuleView(metaclass=RuntimeClass):
    """What ``import m`` gives sandboxed code: the allowlisted attributes of ``m``, nothing else.

    It has no ``__name__`` (so ``from m import x``'s fallback to ``sys.modules`` finds nothing) and
    refuses writes; attribute reads are plain and cost nothing extra.
    """

    def __init__(
        self,
        label: str,
        attributes: Mapping[str, object],
        fresh: Mapping[str, Callable[[], object]] | None = None,
    ) -> None:
        self.__dict__.update(attributes)
        self.__dict__["_label"] = label
        # Mutable values made anew on every read (``sys.path``), so no two readers share one.
        self.__dict__["_fresh"] = dict(fresh or {})

    def __getattr__(self, name: str) -> object:
        fresh = self.__dict__.get("_fresh", {})
        if name in fresh:
            return fresh[name]()
        label = self.__dict__.get("_label", "?")
        raise AttributeError(
            f"restricted module {label!r} has no attribute {name!r} ({why(label, name)})"
        )

    def __setattr__(self, name: str, value: object) -> None:
        raise GuardError("modules are read-only in restricted mode")

    def __delattr__(self, name: str) -> None:
        raise GuardError("modules are read-only in restricted mode")

    def __repr__(self) -> str:
        return f"<restricted module {self.__dict__.get('_label', '?')!r}>"

    def __reduce__(self) -> str | tuple[object, ...]:
        raise GuardError("modules cannot be pickled or copied in restricted mode")


def why(module: str, name: str) -> str:
    """Why ``module.name`` is absent from its view, as the refusal messages say it."""
    reason = refusal_reason(module, name)
    return "not allowed" if reason is None else f"not allowed in restricted mode: {reason}"


def _is_module(value: object) -> bool:
    return type(value) is types.ModuleType


class _Absent(metaclass=RuntimeClass):
    """The type of :data:`ABSENT`."""

    __slots__ = ()


# What the inline private read (``getattr(obj, name, ABSENT)``) gets for a name the lookup does
# not find; a value of a type in ``INLINE_REFUSED`` sends the read to the full guard instead.
ABSENT = _Absent()
INLINE_REFUSED = frozenset({types.ModuleType, _Absent})


# What an exception says about the exceptions around it (``raise ... from ...`` chains).
_EXCEPTION_LINKS = frozenset({"__cause__", "__context__", "__suppress_context__"})

# Receivers whose attribute reads can hand out a method without its receiver: classes,
# ``super`` objects, and generic aliases (``typing.Mapping``, ``Mapping[str, int]``), which
# forward attribute reads to their class.
_ALIASES = (types.GenericAlias, typing._BaseGenericAlias)  # type: ignore[attr-defined]
CLASS_LIKE = (type, super, *_ALIASES)
# What a class-level read may hand out as it is: C methods check their receiver themselves,
# bound methods have one, and data descriptors hand out no function.
_SELF_CHECKING = (
    types.BuiltinFunctionType,
    types.MethodType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.ClassMethodDescriptorType,
    types.MemberDescriptorType,
    types.GetSetDescriptorType,
    property,
    type,
    type(collections.namedtuple("_Probe", "field").field),  # type: ignore[attr-defined]
)


# Types whose public reads go inline unchecked (besides the code's own classes): builtin value
# types, static (their classes cannot change), without an instance ``__dict__``, whose public
# attributes are methods or numbers computed from the value: none holds an object host code chose.
# Reads off any other instance are checked (``Guards.class_attribute``, ``read_value``).
_INLINE_READ_TYPES = frozenset(
    {str, bytes, bytearray, int, float, complex, bool, list, tuple, dict, set, frozenset, range}
)


def _class_entry(owner: object, name: str) -> tuple[type, object]:
    """The class a method read off ``owner`` must be called on, and the raw ``__dict__`` entry
    the read found (``None`` when no class along the lookup defines it)."""
    if is_instance(owner, _ALIASES):
        origin = owner.__origin__  # type: ignore[attr-defined]
        owner = origin if is_class(origin) else type(owner)
    if is_instance(owner, super):
        start = super_thisclass(owner)
        holder = super_self(owner)
        receiver = holder if is_class(holder) else start
        self_class = super_self_class(owner)
        order = mro(self_class) if is_class(self_class) else (start,)
        found = [i for i, k in enumerate(order) if k is start]
        chain = order[found[0] + 1 :] if found else ()
    else:
        assert is_class(owner)
        receiver = owner
        chain = mro(owner)
    for base in chain:
        namespace = own_dict(base)
        if name in namespace:
            return receiver, namespace[name]
    return receiver, None


class _MatchValue(metaclass=RuntimeClass):
    """Holds a value pattern's value, read by guarded code (see ``Guards.match_value``)."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __reduce__(self) -> str | tuple[object, ...]:
        raise GuardError("runtime objects cannot be pickled or copied in restricted mode")


class _AttributeWriter(metaclass=RuntimeClass):
    """What ``_write_`` hands back for an object of a type in ``Guards.writable_attributes``:
    writes (and the reads of augmented assignments) of the listed public names only, passed on
    to the object."""

    __slots__ = ("_names", "_target")
    _names: frozenset[str]
    _target: object

    def __init__(self, target: object, names: frozenset[str]) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_names", names)

    def _check(self, name: str) -> None:
        if name not in self._names:
            raise GuardError(
                f"cannot modify attribute {name!r} of {type(self._target).__name__!r}: "
                f"only {', '.join(sorted(self._names))} can be set"
            )

    def __getattr__(self, name: str) -> object:
        self._check(name)
        return getattr(self._target, name)

    def __setattr__(self, name: str, value: object) -> None:
        self._check(name)
        setattr(self._target, name, value)

    def __delattr__(self, name: str) -> None:
        raise GuardError(f"cannot delete attribute {name!r} of {type(self._target).__name__!r}")

    def __reduce__(self) -> str | tuple[object, ...]:
        raise GuardError("runtime objects cannot be pickled or copied in restricted mode")


class InstanceAttributes(dict[str, object], metaclass=RuntimeClass):
    """``vars(obj)`` and ``obj.__dict__`` of an own instance: a copy of its attributes whose
    changes are made on the object through the write guard (``Guards.safe_setattr``).

    The real ``__dict__`` never reaches the code: host library code looks some hooks up on the
    instance (``copy`` asks ``x.__reduce_ex__`` and obeys it past every guard), so a dunder
    stored there must be impossible. A change made past these methods (``dict.update(d, ...)``)
    changes only the copy. The copy is taken when the code reads it; copied in turn
    (``copy_view``), it is the plain dict it shows."""

    __slots__ = ("_guards", "_owner")
    _guards: Guards
    _owner: object

    def __setitem__(self, key: str, value: object) -> None:
        self._guards.safe_setattr(self._owner, key, value)
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._guards.safe_delattr(self._owner, key)
        super().__delitem__(key)

    def update(self, *args: object, **kwargs: object) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __ior__(self, other: object) -> InstanceAttributes:  # type: ignore[override,misc]
        self.update(other)
        return self

    def setdefault(self, key: str, default: object = None) -> object:
        if key not in self:
            self[key] = default
        return self[key]

    def pop(self, key: str, *default: object) -> object:
        if key not in self:
            if default:
                return default[0]
            raise KeyError(key)
        value = self[key]
        del self[key]
        return value

    def popitem(self) -> tuple[str, object]:
        if not self:
            raise KeyError("popitem(): dictionary is empty")
        key = next(reversed(self))
        return key, self.pop(key)

    def clear(self) -> None:
        for key in list(self):
            del self[key]

    @classmethod
    def fromkeys(cls, keys: object, value: object = None) -> dict[object, object]:  # type: ignore[override]
        return dict.fromkeys(keys, value)  # type: ignore[call-overload]


def check_class(cls: type, own: Collection[type] = ()) -> None:
    """What every class the code makes must pass (a ``class`` statement, the ``enum``
    functional API): no slot named like a hook, no builtin value type that compares otherwise,
    no attribute hook inherited from a library class (``own`` are the code's classes: a hook
    in one came from a wrapped decorator, a frozen dataclass's)."""
    _check_slots(cls)
    _check_value_equality(cls)
    _check_attribute_hooks(cls, own)


# The hooks through which an instance answers reads and writes of its attributes. The code
# cannot define them; inherited from a library class, one could send the write guard's "own
# object" writes elsewhere (``typing``'s alias ``__setattr__`` sets them on ``__origin__``).
_ATTRIBUTE_HOOKS = ("__getattr__", "__getattribute__", "__setattr__", "__delattr__")


def _check_attribute_hooks(cls: type, own: Collection[type]) -> None:
    for name in _ATTRIBUTE_HOOKS:
        klass, entry = lookup(cls, name)
        if klass is not None and klass not in own and type(entry) is types.FunctionType:
            raise GuardError(
                f"class {cls.__name__!r}: a class the code defines cannot inherit "
                f"{klass.__qualname__}.{name} (it redirects attribute access)"
            )


def _check_slots(cls: type) -> None:
    """A slot is a class attribute of its own name; named like a hook (``__reduce_ex__``), it
    would bind a dunder the class body may not bind, whether the class or a base made at run
    time declared it (a static type's members, ``BaseException.__suppress_context__``, are the
    interpreter's own fields). (The slots are read off the classes, not off ``__slots__``,
    which may have been a one-shot iterator.)"""
    for klass in mro(cls):
        if not is_heap_type(klass):
            continue
        for name, value in own_dict(klass).items():
            if type(value) is types.MemberDescriptorType and name.endswith("__"):
                raise GuardError(
                    f"class {cls.__name__!r}: a slot cannot be named {name!r}"
                    + ("" if klass is cls else f" (declared by {klass.__qualname__})")
                )


# Builtin value types that serve as keys of process-wide caches (``struct``'s formats,
# ``_strptime``'s, ``ZoneInfo``'s keys...).
_VALUE_TYPES = (str, bytes, int, float, complex, tuple, frozenset)


def _check_value_equality(cls: type) -> None:
    """A subclass of a builtin value type compares as that type: an ``__eq__`` of its own (or a
    library mixin's, ``UserString``'s) could claim equality with another value and so take that
    value's place in a cache the whole process shares (``struct.pack("QQQ")`` the host calls)."""
    for base in _VALUE_TYPES:
        if is_subclass(cls, base) and lookup(cls, "__eq__")[1] is not own_dict(base)["__eq__"]:
            raise GuardError(
                f"class {cls.__name__!r}: a subclass of {base.__name__} cannot change how it "
                "compares (__eq__)"
            )


# Library hooks that run over, or store under, names the code's class chooses, and the library
# classes whose hook was read and found safe to run for a class the code defines (by module and
# name; matched by identity with the loaded class).
_REVIEWED_LIBRARY_HOOKS: dict[str, tuple[tuple[str, str], ...]] = {
    # Runs when a subclass is made, over the subclass's attributes.
    "__init_subclass__": (
        ("random", "Random"),  # notes which of random/getrandbits the subclass overrides
        ("typing", "_Final"),  # refuses the subclass (typing's internals only)
        ("typing", "Generic"),  # collects type parameters from __orig_bases__
        ("typing", "Protocol"),  # marks protocol members; its checks run on isinstance
        ("zoneinfo", "ZoneInfo"),  # gives the subclass a cache of its own
    ),
    # Tells a descriptor the name it was bound to; a subclass could choose another, under which
    # the library then stores (``cached_property`` writes ``instance.__dict__[attrname]``).
    "__set_name__": (
        ("builtins", "property"),  # keeps the name for its error messages
        ("dataclasses", "Field"),  # records the field's name for the dataclass machinery
    ),
    # A descriptor's methods run on every read, write or delete of its name on an instance;
    # a library descriptor may store into the instance's real ``__dict__`` under a name it holds
    # as data, which an own subclass could set (``self.attrname = "__reduce_ex__"``) to plant a
    # dunder host code then obeys. Reviewed: these store nothing on the instance.
    "__get__": (
        ("builtins", "property"),  # calls fget
        ("builtins", "classmethod"),  # binds to the class
        ("builtins", "staticmethod"),  # hands out the function
    ),
    "__set__": (("builtins", "property"),),  # calls fset
    "__delete__": (("builtins", "property"),),  # calls fdel
}


# The metaclasses a class pattern's class may have (what made the code's own classes: a class
# statement, an ABC, an enum, a protocol); another one answers its class's facts itself.
_PATTERN_METACLASSES = (
    ("builtins", "type"),
    ("abc", "ABCMeta"),
    ("enum", "EnumType"),
    ("safeexec.restricted.enum_view", "_CheckedEnumType"),
    ("typing", "_ProtocolMeta"),
)


def _reviewed(entries: tuple[tuple[str, str], ...]) -> tuple[object, ...]:
    """The loaded objects ``entries`` name (by module and name), for matching by identity."""
    return tuple(getattr(sys.modules.get(module), attr, None) for module, attr in entries)


def _check_subclass_hook(name: str, base: type, own: Collection[type]) -> None:
    """A library class's ``__init_subclass__`` runs library code over the new class's
    attributes, which the code chose (``string.Template`` compiles its ``idpattern`` with the
    real, untimed ``re``), and a library descriptor's ``__set_name__`` decides under which
    name it stores (``cached_property`` writes the instance's real ``__dict__``), as its
    ``__get__``/``__set__``/``__delete__`` may under a name held as data: only reviewed hooks
    may serve a class the code defines."""
    for hook, entries in _REVIEWED_LIBRARY_HOOKS.items():
        reviewed = _reviewed(entries)
        for klass in mro(base):
            if klass in own or klass is object:
                continue
            if hook in own_dict(klass):
                if not any(klass is r for r in reviewed):
                    raise GuardError(
                        f"class {name!r}: a class the code defines cannot subclass "
                        f"{klass.__qualname__}, whose {hook} would run on it; "
                        "use the class as it is, or run the code in native mode"
                    )
                break


def _build_from_resolved(
    func: Callable[..., object],
    name: str,
    bases: tuple[object, ...],
    resolved: tuple[type, ...],
    kw: dict[str, object],
) -> type:
    """What ``__build_class__`` does, from bases already resolved: the metaclass and namespace
    from ``resolved``, the class body run in that namespace (its closure carries the
    ``__class__`` cell ``super()`` reads), ``__orig_bases__`` kept where resolution changed
    them (``typing.Generic`` reads it)."""
    meta, namespace, keywords = types.prepare_class(name, resolved, kw)
    if resolved != bases:
        namespace["__orig_bases__"] = bases
    exec(func.__code__, func.__globals__, namespace, closure=func.__closure__)
    cls: type = meta(name, resolved, namespace, **keywords)
    return cls


def _is_builtin_type(obj: object) -> bool:
    """A class of the interpreter itself: ``__module__`` says ``builtins`` and the type is static
    (a class made at run time, by the code or a library factory, is a heap type whatever
    ``module=`` it was given)."""
    return is_class(obj) and module_of(obj) == "builtins" and not is_heap_type(obj)


class _PatternClassType(RuntimeClass):
    """The metaclass of a class pattern's stand-in: a subject matches by its real class."""

    def __instancecheck__(cls, subject: object) -> bool:
        target = own_dict(cls)["_target"]
        return any(k is target for k in mro(type(subject)))


# Builtin types a one-positional class pattern matches as the subject itself.
_MATCH_SELF = (bool, bytearray, bytes, dict, float, frozenset, int, list, set, str, tuple)


@functools.lru_cache(maxsize=1024)
def _pattern_class(target: type, names: tuple[str, ...] | None) -> type:
    """The stand-in a class pattern on ``target`` matches with: ``names`` frozen as its match
    args (none: a builtin base's "match the subject itself" holds), ``target`` its real class."""
    base = next((b for b in _MATCH_SELF if is_subclass(target, b) and b is not bool), object)
    namespace: dict[str, object] = {"_target": target, "__slots__": ()}
    if names is not None:
        namespace["__match_args__"] = names
    return _PatternClassType(target.__name__, (base,), namespace)


# The interpreter's own fields of its exceptions (C members) that carry values host code chose.
_EXCEPTION_FIELDS = ("args", "value", "obj", "name", "path", "name_from")


def _refuse_metaclass(value: object, where: str, depth: int = 2) -> None:
    """Raise if ``value`` (or an item of a tuple or list it is, ``depth`` levels down) is a
    metaclass: a class whose instances are classes (``type``, ``ABCMeta``)."""
    if is_metaclass(value):
        raise GuardError(
            f"{where} a metaclass ({value.__qualname__!r}): metaclasses build classes outside "
            "the class statement's checks and are not available in restricted mode"
        )
    if depth and type(value) in (tuple, list):
        for item in value:  # type: ignore[attr-defined]
            _refuse_metaclass(item, where, depth - 1)
    elif depth and type(value) is dict:
        for item in (*value, *value.values()):
            _refuse_metaclass(item, where, depth - 1)


# Iterators that call a callable for each item they yield (``map(typing.get_origin, ...)``,
# ``iter(partial(...), sentinel)``): what they make reaches the code by iteration, not by a
# call, so ``_ret_`` hands out one that checks each item instead.
_CALLING_ITERATORS = (
    map,
    itertools.starmap,
    itertools.accumulate,
    type(iter(int, 1)),  # callable_iterator
)


def checked_items(source: Iterator[object]) -> Iterator[object]:
    """``source``'s items, each refused if it is a metaclass (see ``_refuse_metaclass``)."""
    for item in source:
        _refuse_metaclass(item, "an iterator made")
        yield item


def _instance_attributes(owner: object, guards: Guards) -> InstanceAttributes:
    attributes = InstanceAttributes(instance_dict(owner) or {})
    attributes._owner = owner
    attributes._guards = guards
    return attributes


class _SafeFormatter(string.Formatter):
    """``str.format`` without attribute or index traversal in replacement fields."""

    def get_field(self, field_name: str, args: object, kwargs: object) -> tuple[object, str]:
        if "." in field_name or "[" in field_name:
            raise GuardError(
                f"format field {field_name!r} walks attributes or items; "
                "use plain positional or keyword fields"
            )
        return super().get_field(field_name, args, kwargs)  # type: ignore[arg-type]


_SAFE_FORMATTER = _SafeFormatter()


def _safe_str_format(template: str) -> Callable[..., str]:
    def format(*args: object, **kwargs: object) -> str:
        return _SAFE_FORMATTER.vformat(template, args, kwargs)

    return format


class Guards(metaclass=RuntimeClass):
    """Every hook the transformed code calls, plus the set of classes the code created itself."""

    def __init__(self) -> None:
        self.own_classes: set[type] = set()
        # The own classes whose instances are not class-like (no ``super`` subclass): reads off
        # their instances take the read guard's fast path (see ``_make_read_guard``).
        self._plain_own: set[type] = set()
        # The own classes whose bases are all own classes or ``object``: on their instances the
        # interpreter's lookup finds a non-dunder name exactly where ``_defined_by_code`` does
        # (``object`` defines dunders only), so the transformer's method fast paths
        # (``_simple_``, see ``SafeexecTransformer._receiver_access``) read it inline.
        self.simple_own: set[type] = set()
        # Types whose public reads go inline unchecked (the code's classes and builtin value
        # types, see ``class_attribute``); filled as the code reads attributes.
        self.plain_types: set[type] = set()
        # Other types whose instances are not class-like: their public reads go inline too, the
        # value through ``read_value`` (``_got_``), skipped for a type in ``read_plain``.
        self.checked_types: set[type] = set()
        self.read_plain: set[type] = set()
        self.read_value = self._make_read_value()
        # What ``type(x)`` and ``x.__class__`` answer instead of a class whose constructor would
        # undo a wrapper (a counting executor hands out ``range`` as a function).
        self.type_aliases: dict[type, object] = {InstanceAttributes: dict}
        # Library and view types whose instances the code may change, and the public attribute
        # names it may set on them (``TarInfo.size``, a connection's ``row_factory``); the
        # module views register them.
        self.writable_attributes: dict[type, frozenset[str]] = {}
        self._lock = threading.Lock()
        self.write_guard = self._make_write_guard()
        self.read_guard = self._make_read_guard()
        # What ``_ret_`` found not class-like (containers aside): the inline check's set.
        self.returned_plain: set[type] = set()
        self.returned = self._make_returned()
        # Who decides on a ``MEDIATED_ATTRIBUTES`` read (the executor installs the data views'
        # ``mediate``); without one, such a read is the plain read it would have been.
        self.mediator: Callable[[object, str], object] = self.plain_read

    def __reduce__(self) -> str | tuple[object, ...]:
        # Sandboxed code holds bound methods of this object (``getattr``, ``print``, ``open``);
        # ``copy.deepcopy(open, memo)`` would copy it and leave the copy in ``memo``.
        raise GuardError("runtime objects cannot be pickled or copied in restricted mode")

    # -- ownership ------------------------------------------------------------------------------
    def is_own(self, obj: object) -> bool:
        """Is ``obj`` an instance of a class the code defined, or such a class?"""
        return type(obj) in self.own_classes or (is_class(obj) and obj in self.own_classes)

    def is_own_function(self, obj: object) -> bool:
        """Is ``obj`` a function compiled from the code (its globals hold these guards)?"""
        return (
            type(obj) is types.FunctionType
            and function_globals(obj).get("_write_") is self.write_guard
        )

    def register_class(self, cls: object) -> object:
        if is_class(cls):
            cls = typing.cast(type, cls)  # is_class holds
            with self._lock:
                self.own_classes.add(cls)
                if not is_subclass(cls, CLASS_LIKE):
                    self._plain_own.add(cls)
                own = self.own_classes
                if all(k in own or k is object for k in mro(cls)[1:]):
                    self.simple_own.add(cls)
        return cls

    def build_class(
        self, func: Callable[..., object], name: str, *bases: object, **kw: object
    ) -> object:
        """``__build_class__`` for ``class`` statements: no metaclass, classes as bases only."""
        if "metaclass" in kw:
            raise GuardError("the metaclass keyword is not allowed")
        private = sorted(key for key in kw if key.startswith("_"))
        if private:
            # Class keywords go to the bases' ``__init_subclass__``: ``_root=True`` is how
            # ``typing`` lets its own internals subclass its final classes.
            raise GuardError(f"class {name!r}: private class keywords {private} are not allowed")
        # Bases are resolved once (``__mro_entries__`` runs once), and the tuple checked here
        # is the one the class is built from: no second resolution can hand back another.
        resolved = types.resolve_bases(bases)
        for base in resolved:
            if not is_class(base):
                raise GuardError(f"class {name!r}: base {base!r} is not a class")
            if is_metaclass(base):
                raise GuardError(f"class {name!r}: metaclasses cannot be subclassed")
            _check_subclass_hook(name, base, self.own_classes)
        cls = _build_from_resolved(func, name, bases, resolved, kw)
        check_class(cls, self.own_classes)
        return self.register_class(cls)

    # -- attribute reads ---------------------------------------------------------------------------
    def getattr_guard(self, obj: object, name: str) -> object:
        """``_getattr_``: reached only for names starting with ``_`` or on the dangerous list."""
        if name in MEDIATED_ATTRIBUTES:
            return self._checked(self.mediator(obj, name))
        if name in _ANYWHERE_DUNDERS:
            return self._checked(getattr(obj, name))
        if name == "__class__":
            if is_class(obj):
                raise GuardError("__class__ of a class (its metaclass) is not accessible")
            return self.type_aliases.get(type(obj), type(obj))
        if name == "format" and type(obj) is str:
            return _safe_str_format(obj)
        if name in _EXCEPTION_LINKS and is_instance(obj, BaseException):
            return getattr(obj, name)  # other exceptions, or None (never the traceback)
        if self.is_own(obj):
            if name.startswith("__") and name.endswith("__"):
                if name == "__dict__" and not is_class(obj):
                    return _instance_attributes(obj, self)
                if name in USER_DUNDERS:
                    return self._unbound_checked(obj, name, self._checked(getattr(obj, name)))
            elif name == "register" and is_class(obj):
                return self._own_register(obj)
            elif self._defined_by_code(obj, name):
                # A private name is the code's own only where an own class (or the instance)
                # defines it: inherited from a library class or a metaclass (``EnumType._convert_``,
                # ``ABCMeta._dump_registry``) it is host code the library never meant to expose.
                return self._unbound_checked(obj, name, self._checked(getattr(obj, name)))
        elif name in USER_DUNDERS:
            if is_instance(obj, super) and super_thisclass(obj) in self.own_classes:
                return self._unbound_checked(obj, name, self._checked(getattr(obj, name)))
            if _is_builtin_type(obj):
                return self._checked(getattr(obj, name))
        raise GuardError(f"access to attribute {name!r} of {type(obj).__name__!r} is not allowed")

    def _make_read_guard(self) -> Callable[[object, str], object]:
        """``_getattr_``: :meth:`getattr_guard`, with the common private read (``self._count``,
        ``self._helper``) off an instance of an own, not class-like class answered in one step.

        For a name that is neither a dunder nor mediated (one ending in ``_`` goes the full
        way), the full guard gives the plain read exactly when the instance's ``__dict__`` or
        the class itself defines the name (``_defined_by_code``), barring a module."""
        plain_own = self._plain_own
        full = self.getattr_guard
        mediated = MEDIATED_ATTRIBUTES
        module = types.ModuleType

        def _getattr_(obj: object, name: str) -> object:
            cls = type(obj)
            if cls in plain_own and name and name[-1] != "_" and name not in mediated:
                inst = instance_dict(obj)
                if (inst is not None and name in inst) or name in own_dict(cls):
                    value = getattr(obj, name)
                    # Not a module, and not a class (so not a metaclass): else the full guard.
                    if type(value) is not module and not is_class(value):
                        return value
            return full(obj, name)

        return _getattr_

    def plain_read(self, obj: object, name: str) -> object:
        """What a public read ``obj.name`` gives (plain, or receiver-checked off a class)."""
        if is_instance(obj, CLASS_LIKE):
            return self.class_attribute(obj, name)
        return getattr(obj, name)

    def _defined_by_code(self, obj: object, name: str) -> bool:
        """Does the code's own class (or instance) supply what ``getattr(obj, name)`` returns?
        Decided by where the read finds it, not by whether some own class also defines it."""
        cls: type = obj if is_class(obj) else type(obj)
        owner, entry = lookup(cls, name)
        if cls is type(obj):
            data_descriptor = owner is not None and lookup(type(entry), "__set__")[0] is not None
            inst = instance_dict(obj)
            if not data_descriptor and inst is not None and name in inst:
                return True
        return owner is not None and owner in self.own_classes

    def _unbound_checked(self, owner: object, name: str, value: object) -> object:
        """A host-made method read off a class (a dataclass ``__init__``, ``Counter.copy``, an
        inherited ``Enum.__repr__``) runs unguarded host code on its first argument: it only
        takes instances of that class, never a host object to write to or look through.

        ``owner`` is the class (or the ``super`` object) the name was read from. Functions are
        wrapped; C methods check their receiver themselves; other descriptors that would hand
        out a function (``cached_property``, ``lru_cache`` wrappers) are wrapped if callable and
        refused otherwise, unless they are plain data descriptors.
        """
        if not is_instance(owner, CLASS_LIKE) or is_instance(value, _SELF_CHECKING):
            return value
        if self.is_own_function(value):
            return value
        receiver_class, entry = _class_entry(owner, name)
        if is_instance(entry, staticmethod):
            return value  # written to take any arguments, like a module's function
        if type(value) is not types.FunctionType and lookup(type(value), "__get__")[0] is None:
            return value  # a constant, a nested class, an instance: no receiver to check
        if not callable(value):
            raise GuardError(
                f"{receiver_class.__name__}.{name} is a {type(value).__name__} descriptor; "
                "read it from an instance instead of the class"
            )

        def unbound(receiver: object, /, *args: object, **kwargs: object) -> object:
            # By the receiver's real class: an ABC's ``isinstance`` answers from its registry.
            if not any(k is receiver_class for k in mro(type(receiver))):
                raise GuardError(
                    f"{receiver_class.__name__}.{name} takes an instance of "
                    f"{receiver_class.__name__!r} first, not {type(receiver).__name__!r}"
                )
            return value(receiver, *args, **kwargs)

        unbound.__name__ = unbound.__qualname__ = name
        unbound.__doc__ = getattr(value, "__doc__", None)
        return unbound

    def class_attribute(self, obj: object, name: str) -> object:
        """``_cattr_``: a public attribute read the inline path does not take.

        Off a class or a ``super`` object: instances give bound methods, so only class-level
        reads can hand out a library method without its receiver; those come back
        receiver-checked (see ``_unbound_checked``). Off an instance: checked like ``getattr``'s,
        unless its type reads inline from now on (``_INLINE_READ_TYPES``, ``own_classes``).
        """
        kind = type(obj)
        if not is_instance(obj, CLASS_LIKE):
            if kind in self.own_classes or kind in _INLINE_READ_TYPES:
                # What such a read gives is what the code stored or a bound method, and whether
                # a value is class-like depends on its type alone (``__class__`` and
                # ``__bases__`` cannot be written): later reads off this type go inline.
                self.plain_types.add(kind)
                return getattr(obj, name)
            # Off any other object the value may be one host code stored: never a metaclass or
            # a module (``read_value``); later reads off this type check it inline.
            self.checked_types.add(kind)
            return self.read_value(getattr(obj, name))
        value = getattr(obj, name)
        return self._checked(self._unbound_checked(obj, name, value))

    def _make_read_value(self) -> Callable[[object], object]:
        """``_got_``: what a public read off an instance of a ``checked_types`` type gives:
        never a metaclass (nor one in a tuple it is, two levels down) or a module. A list or
        dict is not scanned on every read (a read in a loop would cost its length each time);
        the reachability crawl walks the library's. A value of a type already seen to be
        neither class-like, a container nor a module passes in one set lookup."""
        passing = self.read_plain

        def _got_(value: object) -> object:
            kind = type(value)
            if kind in passing:
                return value
            _refuse_metaclass(value, "a read gave", 2 if kind is tuple else 0)
            if _is_module(value):
                raise GuardError("module objects are not accessible in restricted mode")
            if kind not in (tuple, list, dict) and not is_subclass(kind, CLASS_LIKE):
                passing.add(kind)
            return value

        return _got_

    def augmented_target(self, obj: object, name: str) -> object:
        """``_augwrite_``: the receiver of ``obj.name op= value``.

        The interpreter reads ``obj.name`` itself before the operator, so an augmented
        assignment must not read what a plain read would not hand out: the read goes through
        the same guard, and a value the guard would wrap or refuse is refused here.
        """
        own_instance = type(obj) in self._plain_own  # ``_write_`` would hand it back as it is
        target = obj if own_instance else self.write_guard(obj)
        if name.startswith("_") or name in DENIED_ATTRIBUTES:
            checked = self.read_guard(obj, name)
        elif not own_instance and is_instance(obj, CLASS_LIKE):
            checked = self.class_attribute(obj, name)
        else:
            return target
        if checked is not getattr(obj, name):
            raise GuardError(f"augmented assignment to {name!r} of this object is not allowed")
        return target

    def _own_register(self, abc: type) -> Callable[[type], type]:
        """``C.register`` of an own ABC, for own classes only: ``isinstance`` answers from the
        registry, so registering a library or runtime class would make its instances pass for
        ``C``'s (a class pattern on ``C`` then reads their attributes by ``C``'s fields)."""
        register = abc.register  # type: ignore[attr-defined]

        def own_register(subclass: type) -> type:
            if not (is_class(subclass) and subclass in self.own_classes):
                raise GuardError(
                    f"{abc.__name__}.register takes classes defined by the code in restricted mode"
                )
            return register(subclass)

        own_register.__name__ = own_register.__qualname__ = "register"
        return own_register

    def match_class(self, cls: object) -> object:
        """``_mclass_``: the class of a class pattern with positional sub-patterns, read by
        guarded code before the ``match``.

        Positional sub-patterns read the attributes ``__match_args__`` names with the
        interpreter's own ``getattr``: each must be a name the code could read as ``obj.name``
        anywhere (public, not denied, not mediated). The pattern then matches on a stand-in
        (:func:`_pattern_class`) holding the names checked here, so a ``__match_args__`` added
        later (a case guard that applies ``dataclass``) is never the one read; and it tests the
        subject by its real class, never by ``isinstance``, which an ABC's registry or a
        runtime-checkable protocol answers."""
        if not is_class(cls):
            raise GuardError("a class pattern needs a class")
        cls = typing.cast(type, cls)  # is_class holds
        if not is_heap_type(cls):
            return cls  # a builtin: its match args and isinstance cannot change
        meta = type(cls)
        if not any(meta is m for m in _reviewed(_PATTERN_METACLASSES)):
            raise GuardError(
                f"a class pattern on {cls.__name__!r}: its metaclass {meta.__qualname__!r} "
                "was not reviewed for class patterns"
            )
        declared: typing.Any = lookup(cls, "__match_args__")[1]
        names: tuple[object, ...] | None = None
        if declared is not None:
            names = tuple(declared)
            for name in names:
                if (
                    type(name) is not str
                    or name.startswith("_")
                    or name in DENIED_ATTRIBUTES
                    or name in MEDIATED_ATTRIBUTES
                ):
                    raise GuardError(
                        f"a class pattern on {cls.__name__!r} would read its positional "
                        f"attribute {name!r}, which is not allowed"
                    )
        return _pattern_class(cls, names)

    def match_subject(self, subject: object) -> object:
        """The subject of a ``match`` with class patterns: class patterns read attributes with
        the interpreter's own ``getattr``, which on a class would hand out unbound methods."""
        if is_instance(subject, CLASS_LIKE):
            raise GuardError("class patterns cannot match a class or a super object")
        return subject

    def match_value(self, value: object) -> _MatchValue:
        """A value pattern's dotted name, read by guarded code before the ``match`` (the
        pattern then compares against ``holder.value``: the interpreter's own read would hand
        an unbound method to an ``__eq__`` the code wrote)."""
        return _MatchValue(value)

    def _make_returned(self) -> Callable[[object], object]:
        """``_ret_``: what a call hands back to the code (a library helper's return, a view
        method's, a default argument passed through): never a metaclass, which would build
        classes no ``class`` statement made, past every check tied to one (``typing.get_origin``
        of ``typing.Type[int]`` is the real ``type``). A tuple's, list's or dict's items are
        looked at too (the typing helpers return theirs in one), and an iterator that calls a
        callable per item checks each (``_CALLING_ITERATORS``). A value of a type already seen
        not to be class-like (containers aside) passes in one set lookup."""
        passing = self.returned_plain

        def _ret_(value: object) -> object:
            kind = type(value)
            if kind in passing:
                return value
            _refuse_metaclass(value, "a call returned")
            if is_subclass(kind, _CALLING_ITERATORS):
                return checked_items(value)  # type: ignore[arg-type]
            if kind is types.GeneratorType:
                # A library generator makes what it yields; the code's own yields what it had.
                own = generator_globals(value).get("_write_") is self.write_guard  # type: ignore[arg-type]
                return value if own else checked_items(value)  # type: ignore[arg-type]
            if kind not in (tuple, list, dict) and not is_subclass(kind, CLASS_LIKE):
                passing.add(kind)
            return value

        return _ret_

    @staticmethod
    def caught_exception(exc: object) -> None:
        """``_exc_``: an exception a handler binds, made by host code: its arguments, its
        attributes and the interpreter's fields of it (``StopIteration.value``,
        ``AttributeError.obj``, read through their descriptors) hold no metaclass."""
        _refuse_metaclass(exc, "an exception carried")
        held = instance_dict(exc)
        fields = []
        for name in _EXCEPTION_FIELDS:
            owner, entry = lookup(type(exc), name)
            static = owner is not None and not is_heap_type(owner)
            if static and type(entry) in (types.MemberDescriptorType, types.GetSetDescriptorType):
                fields.append(entry.__get__(exc, type(exc)))  # type: ignore[attr-defined]
        for value in (*fields, *(held.values() if held else ())):
            _refuse_metaclass(value, "an exception carried")

    @staticmethod
    def _checked(value: object) -> object:
        _refuse_metaclass(value, "a read gave")
        if _is_module(value):
            raise GuardError("module objects are not accessible in restricted mode")
        if type(value) is types.BuiltinFunctionType and value.__name__ == "__new__":
            # A type's raw ``__new__`` (an own Enum's ``_new_member_`` is ``object.__new__``)
            # makes an instance of any class without its ``__init__``, a runtime object too.
            raise GuardError("a type's raw __new__ is not accessible in restricted mode")
        return value

    def safe_getattr(self, obj: object, name: str, *default: object) -> object:
        """The ``getattr`` builtin: a dynamic name gets the same checks as ``obj.name``."""
        if type(name) is not str:
            raise TypeError("getattr(): attribute name must be a string")
        try:
            if name.startswith("_") or name in DENIED_ATTRIBUTES:
                return self.read_guard(obj, name)
            if is_instance(obj, CLASS_LIKE):
                return self.class_attribute(obj, name)
            return self._checked(getattr(obj, name))
        except AttributeError:
            if default:
                return default[0]
            raise

    def safe_hasattr(self, obj: object, name: str) -> bool:
        try:
            self.safe_getattr(obj, name)
        except (AttributeError, GuardError):
            return False
        return True

    # -- writes ------------------------------------------------------------------------------------
    def _make_write_guard(self) -> Callable[[object], object]:
        """``_write_``: attribute writes and deletes only on the code's own objects.

        A closure over the own-class set, so the common case (an instance of an own class) costs
        one set lookup and no attribute access.
        """
        own = self.own_classes
        writable = self.writable_attributes

        def _write_(obj: object) -> object:
            if type(obj) in own:
                return obj
            if (is_class(obj) and obj in own) or self.is_own_function(obj):
                return obj
            names = writable.get(type(obj))
            if names is not None:
                return _AttributeWriter(obj, names)
            raise GuardError(
                f"cannot modify attributes of {type(obj).__name__!r}: "
                "only objects of classes defined by the code can be changed"
            )

        return _write_

    def safe_setattr(self, obj: object, name: str, value: object) -> None:
        if type(name) is not str or (name.startswith("__") and name.endswith("__")):
            raise GuardError(f"setattr of {name!r} is not allowed")
        setattr(self.write_guard(obj), name, value)

    def safe_delattr(self, obj: object, name: str) -> None:
        if type(name) is not str or (name.startswith("__") and name.endswith("__")):
            raise GuardError(f"delattr of {name!r} is not allowed")
        delattr(self.write_guard(obj), name)

    # -- calls and misc ---------------------------------------------------------------------------
    @staticmethod
    def apply(func: Callable[..., object], *args: object, **kwargs: object) -> object:
        """``_apply_``: calls written with ``*args``/``**kwargs`` (keywords must be strings)."""
        return func(*args, **kwargs)

    def safe_type(self, *args: object) -> object:
        """One-argument ``type``; never hands out a metaclass (which could build classes)."""
        if len(args) != 1:
            raise GuardError("type() takes exactly one argument in restricted mode")
        if is_class(args[0]):
            raise GuardError("type() of a class is not available in restricted mode")
        return self.type_aliases.get(type(args[0]), type(args[0]))

    def safe_vars(self, *obj: object) -> object:
        """``vars(obj)`` of an instance of a class the code defined: its attributes, as
        ``obj.__dict__`` hands them out too (:class:`InstanceAttributes`). No argument
        (``locals()``), classes and host objects (a module view, a library instance) are
        refused."""
        if len(obj) != 1:
            raise GuardError("vars() takes exactly one argument in restricted mode")
        target = obj[0]
        if is_class(target) or not self.is_own(target):
            raise GuardError(
                "vars() applies only to instances of classes defined by the code in restricted mode"
            )
        return self.getattr_guard(target, "__dict__")

    @staticmethod
    def safe_dir(*obj: object) -> list[str]:
        if not obj:
            raise GuardError("dir() without an argument is not available in restricted mode")
        return sorted(name for name in dir(obj[0]) if not name.startswith("__"))


class PrintCollector(metaclass=RuntimeClass):
    """``print`` for sandboxed code: writes to the run's sink and keeps at most ``cap_bytes`` of
    text for RestrictedPython's ``printed`` name."""

    __slots__ = ("_cap", "_kept", "_kept_size", "_sink")

    def __init__(self, sink: TextSink, *, cap_bytes: int) -> None:
        self._sink = sink
        self._cap = cap_bytes
        self._kept: list[str] = []
        self._kept_size = 0

    def restart(self, sink: TextSink) -> None:
        """Begin a run: nothing kept, output to ``sink`` (as a collector made afresh)."""
        self._sink = sink
        self._kept = []
        self._kept_size = 0

    def __reduce__(self) -> str | tuple[object, ...]:
        # Sandboxed code holds bound methods of this object (``getattr``, ``print``, ``open``);
        # ``copy.deepcopy(open, memo)`` would copy it and leave the copy in ``memo``.
        raise GuardError("runtime objects cannot be pickled or copied in restricted mode")

    def _call_print(
        self,
        *objects: object,
        sep: str | None = " ",
        end: str | None = "\n",
        file: object = None,
        flush: bool = False,
    ) -> None:
        if file is not None:
            print(*objects, sep=sep, end=end, file=file)  # type: ignore[call-overload]
            return
        text = (" " if sep is None else sep).join(str(o) for o in objects)
        text += "\n" if end is None else end
        if self._kept_size < self._cap:
            piece = text[: self._cap - self._kept_size]
            self._kept.append(piece)
            self._kept_size += len(piece)
        self._sink.write(text)

    def __call__(self) -> str:
        return "".join(self._kept)


class _SinkProxy(io.TextIOBase):
    """Writes to the current ``sys.stdout`` at write time (the worker swaps it per cell)."""

    def write(self, text: str) -> int:
        import sys

        return sys.stdout.write(text)


def _view_value(value: object) -> object:
    if is_instance(value, (dict, list, set, bytearray)):
        copied: typing.Any = value
        return types.MappingProxyType(dict(copied)) if is_instance(value, dict) else tuple(copied)
    return value
