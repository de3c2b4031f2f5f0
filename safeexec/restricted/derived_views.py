"""Views of pure stdlib modules, derived from the modules' own public API (issue 11).

A hand-picked allowlist misses ordinary functions (``statistics.correlation``,
``itertools.pairwise``...), so for the modules below a view is:

* the module's public API: ``__all__`` when it has one, else its names without a leading
  underscore;
* minus the documented denylist :data:`DERIVED_DENIED` (every entry says why: it takes a path,
  opens files, imports or evaluates by name, touches the interpreter or process-wide state, spawns
  threads or processes, pickles, or hands out host objects the guards cannot wrap);
* minus every value that is a module (a submodule with a view of its own, ``collections.abc``,
  is handed out as that view);
* intersected with the reviewed golden list :data:`GOLDEN_PATH` (``module_views.json``), pinned
  per minor version (``{"3.11": {module: [names]}, "3.12": ...}``), so a newer Python that adds a
  function does not silently widen a view: the name stays absent until that version's pin is
  regenerated and reviewed (``make module-views`` runs ``python -m
  safeexec.restricted.derived_views --write`` under each version;
  ``tests/restricted/test_derived_views.py`` fails until then). A version without a pin
  uses the newest older pin, never a newer one.

Names with a wrapper (``stdlib_wrappers._SPECIAL_VALUES``) keep it: the executor builds every
name of a view, derived or not, through the same wrapper table. This module imports nothing from
the runtime, so the allowlist, the guards and the executor can all read it.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import sys
import types
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "DERIVED_DENIED",
    "DERIVED_MODULES",
    "GOLDEN_PATH",
    "derived_names",
    "golden_views",
    "pinned_version",
    "pinned_views",
    "refusal_reason",
    "regenerate",
]

GOLDEN_PATH = Path(__file__).with_name("module_views.json")

_HOST_STATE = "changes process-wide state the host shares"
_HOST_STDOUT = "writes to the process's own stdout, not the cell's output"
_UPDATE_WRAPPER = (
    "update_wrapper on its argument copies a class's methods, unbound, onto the wrapper "
    "(the wrapped helpers refuse classes)"
)
_WRITES_PAST_GUARD = "stores into its argument, past the runtime's write guard"
_SETS_ON_ARGUMENT = "sets attributes on its argument, which may be a host object"
_HOST_COROUTINES = (
    "its methods return host coroutines (async stacks await the asyncio view's review)"
)
_METACLASS = "a metaclass: calling it builds classes outside the own-class registry"

# Module → {denied name: why}. Every derived module has an entry (empty when nothing is denied).
DERIVED_DENIED: Mapping[str, Mapping[str, str]] = {
    "abc": {
        "ABCMeta": _METACLASS,
        "abstractclassmethod": _SETS_ON_ARGUMENT + " (abc.abstractmethod has a wrapper)",
        "abstractstaticmethod": _SETS_ON_ARGUMENT + " (abc.abstractmethod has a wrapper)",
        "update_abstractmethods": "rewrites a class's __abstractmethods__, a host class too",
    },
    "array": {},
    "base64": {},
    "binascii": {},
    "bisect": {},
    "calendar": {
        "setfirstweekday": _HOST_STATE + " (the module's first weekday)",
        "prcal": _HOST_STDOUT,
        "prmonth": _HOST_STDOUT,
        "TextCalendar": "its pr* methods write to the process's own stdout",
        "LocaleTextCalendar": "sets the process's locale while it formats",
        "LocaleHTMLCalendar": "sets the process's locale while it formats",
        "HTMLCalendar": "class-level lists of CSS classes every instance shares",
    },
    "cmath": {},
    "collections": {},
    "collections.abc": {},
    "colorsys": {},
    "contextlib": {
        "redirect_stdout": "replaces sys.stdout for the whole process",
        "redirect_stderr": "replaces sys.stderr for the whole process",
        "chdir": "changes the process's working directory (a path)",
        "ContextDecorator": "its __call__ wraps a class: " + _UPDATE_WRAPPER,
        "asynccontextmanager": _UPDATE_WRAPPER,
        "AsyncExitStack": _HOST_COROUTINES,
        "aclosing": _HOST_COROUTINES,
    },
    "copy": {
        "replace": "calls the object's __replace__ with names the code chooses (code objects "
        "have one), past the copy view",
    },
    "csv": {
        "field_size_limit": _HOST_STATE + " (the parser's field limit)",
        "register_dialect": _HOST_STATE + " (the dialect registry)",
        "unregister_dialect": _HOST_STATE + " (the dialect registry)",
    },
    "dataclasses": {
        "make_dataclass": "builds a class by exec of generated source, not an own class",
    },
    "datetime": {},
    "decimal": {
        "getcontext": "the thread's context, shared with host code, with writable settings",
        "setcontext": _HOST_STATE + " (the thread's decimal context)",
        "DefaultContext": "the process's template context; the view makes settings writable",
        "BasicContext": "a process-wide context; the view makes settings writable",
        "ExtendedContext": "a process-wide context; the view makes settings writable",
    },
    "difflib": {
        "HtmlDiff": "numbers its tables with a class attribute: each use changes host state",
    },
    "enum": {
        "EnumMeta": _METACLASS,
        "EnumDict": "the metaclass's class namespace: builds members outside the enum view",
        "EnumType": _METACLASS,
        "global_enum": "writes members into the defining module's globals via sys.modules",
        "global_enum_repr": "reads the defining module from sys.modules (global_enum's helper)",
        "global_flag_repr": "reads the defining module from sys.modules (global_enum's helper)",
        "global_str": "reads the defining module from sys.modules (global_enum's helper)",
        "pickle_by_enum_name": "a pickle reducer",
        "pickle_by_global_name": "a pickle reducer",
        "property": "its getter/setter/deleter are types.DynamicClassAttribute's host functions",
        "ReprEnum": "a memberless base the views cannot stand in for (it needs a data type), "
        "whose functional API would turn names into hooks (enum_view.py)",
    },
    "fractions": {},
    "functools": {
        "update_wrapper": "copies attributes the caller names (functools.wraps has a wrapper)",
        "singledispatch": _UPDATE_WRAPPER,
        "singledispatchmethod": _UPDATE_WRAPPER,
    },
    "graphlib": {},
    "hashlib": {
        "pbkdf2_hmac": "an uninterruptible C loop whose length the code chooses",
    },
    "heapq": {},
    "html": {},
    "itertools": {},
    "json": {},
    "math": {},
    "numbers": {},
    "operator": {
        "attrgetter": "reads attributes named by strings, past the guard",
        "methodcaller": "calls methods named by strings, past the guard",
        **{
            name: _WRITES_PAST_GUARD
            for name in [
                "setitem",
                "delitem",
                "iadd",
                "iand",
                "iconcat",
                "ifloordiv",
                "ilshift",
                "imatmul",
                "imod",
                "imul",
                "ior",
                "ipow",
                "irshift",
                "isub",
                "itruediv",
                "ixor",
            ]
        },
    },
    "pprint": {
        "PrettyPrinter": "its stream defaults to the process's own stdout",
    },
    "random": {},
    "re": {
        "purge": _HOST_STATE + " (the compiled-pattern cache)",
    },
    "reprlib": {},
    "secrets": {},
    "statistics": {},
    "string": {
        "Formatter": "walks attributes and items named in format strings",
    },
    "struct": {},
    "textwrap": {},
    "time": {
        "clock_settime": "sets a system clock",
        "clock_settime_ns": "sets a system clock",
        "tzset": "re-reads TZ from the process environment; " + _HOST_STATE,
        "pthread_getcpuclockid": "takes a host thread id",
    },
    "typing": {
        "get_type_hints": "evaluates string annotations with eval",
        "ForwardRef": "evaluates its string with eval",
        "no_type_check": _SETS_ON_ARGUMENT,
        "no_type_check_decorator": _SETS_ON_ARGUMENT,
        "final": _SETS_ON_ARGUMENT,
        "override": _SETS_ON_ARGUMENT,
        "dataclass_transform": _SETS_ON_ARGUMENT,
        "reveal_type": "writes to the process's own stderr",
        "get_overloads": "reads the process-wide overload registry: host functions",
        "clear_overloads": _HOST_STATE + " (the overload registry)",
    },
    "unicodedata": {},
    "uuid": {
        "main": _HOST_STDOUT + " (the module's command line, from sys.argv)",
        "getnode": "reads the host's network interfaces (may run ifconfig or ip)",
        "uuid1": "embeds the host's MAC address (getnode)",
    },
    "zlib": {},
    "zoneinfo": {
        "reset_tzpath": _HOST_STATE + " (the time-zone search path, from paths)",
        "TZPATH": "the host's time-zone directories",
    },
}

DERIVED_MODULES = tuple(sorted(DERIVED_DENIED))


def _public(module: types.ModuleType) -> list[str]:
    """The module's public API: ``__all__`` when it has one, else names without ``_``."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = dir(module)
    return [n for n in names if isinstance(n, str) and not n.startswith("_")]


@functools.cache
def derived_names(name: str) -> frozenset[str]:
    """The names of stdlib module ``name`` (one of :data:`DERIVED_MODULES`) a view may hold on
    this interpreter: its public API minus the denylist and modules (submodules with a view of
    their own stay, as that view). The runtime intersects these with :func:`golden_views`."""
    module = importlib.import_module(name)
    denied = DERIVED_DENIED[name]
    names = {
        attr
        for attr in _public(module)
        if attr not in denied
        and hasattr(module, attr)
        and not isinstance(getattr(module, attr), types.ModuleType)
    }
    for child in DERIVED_MODULES:
        parent, _, leaf = child.rpartition(".")
        if parent == name:
            names.add(leaf)
    return frozenset(names)


Pins = dict[str, dict[str, list[str]]]


def _minor(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def _version_key(minor: str) -> tuple[int, ...]:
    return tuple(int(part) for part in minor.split("."))


def _running() -> tuple[int, int]:
    return (sys.version_info.major, sys.version_info.minor)


def _read_golden(path: Path) -> Pins:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not all(
        isinstance(version, str)
        and version.count(".") == 1
        and all(part.isdigit() for part in version.split("."))
        and isinstance(views, dict)
        and all(isinstance(v, list) and all(isinstance(n, str) for n in v) for v in views.values())
        for version, views in data.items()
    ):
        raise ValueError(
            f'{path}: expected an object of minor version ("3.12") → module name → list of names'
        )
    return data


def pinned_version(pins: Mapping[str, object], running: tuple[int, int]) -> str | None:
    """The pin a Python ``running`` (major, minor) uses: its own, else the newest older one
    (never a newer one: its names were reviewed on a stdlib this Python does not have)."""
    return max((v for v in pins if _version_key(v) <= running), key=_version_key, default=None)


def pinned_views(pins: Pins, running: tuple[int, int]) -> Mapping[str, frozenset[str]]:
    """The reviewed names per derived module for a Python ``running``; a module missing from the
    pin (or a Python older than every pin) has an empty view (fail closed)."""
    version = pinned_version(pins, running)
    views = pins[version] if version is not None else {}
    return types.MappingProxyType(
        {name: frozenset(views.get(name, ())) for name in DERIVED_MODULES}
    )


@functools.cache
def golden_views() -> Mapping[str, frozenset[str]]:
    """The reviewed names per derived module on this interpreter (the shipped golden's pin for
    its minor version): an upper bound on each view."""
    return pinned_views(_read_golden(GOLDEN_PATH), _running())


def regenerate(golden: Pins | None = None) -> Pins:
    """The golden with this interpreter's pin as it derives it (per module, the sorted derived
    names); the other versions' pins are kept as they are."""
    pins = dict(golden if golden is not None else _read_golden(GOLDEN_PATH))
    pins[_minor(_running())] = {name: sorted(derived_names(name)) for name in DERIVED_MODULES}
    return pins


def refusal_reason(module: str, attr: str) -> str | None:
    """Why ``module.attr`` is not in its view, when the denylist says (else ``None``)."""
    return DERIVED_DENIED.get(module, {}).get(attr)


def main(argv: list[str] | None = None) -> int:
    """Print the difference between the shipped golden's pin for this Python and what it
    derives, or write this Python's pin (``--write``, after review of the difference)."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--write", action="store_true", help="write this Python's pin")
    args = parser.parse_args(argv)
    golden = _read_golden(GOLDEN_PATH)
    fresh = regenerate(golden)
    minor = _minor(_running())
    compared = pinned_version(golden, _running())
    if compared != minor:
        print(f"no pin for Python {minor}; comparing with the pin for {compared or 'none'}")
    pinned = golden.get(compared, {}) if compared is not None else {}
    for name in DERIVED_MODULES:
        added = sorted(set(fresh[minor][name]) - set(pinned.get(name, ())))
        removed = sorted(set(pinned.get(name, ())) - set(fresh[minor][name]))
        if added or removed:
            print(f"{name}: new {' '.join(added) or '-'}; gone {' '.join(removed) or '-'}")
    if args.write:
        GOLDEN_PATH.write_text(json.dumps(fresh, indent=1, sort_keys=True) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
