"""Every class of the restricted runtime that sandboxed code can name is a ``RuntimeClass``:
once made it takes no attribute writes, so no write gadget can swap a helper the runtime calls
with privileged arguments (three escapes went through ``SqliteConnection._open``,
``TimedPattern._wrap`` and ``WorkdirFile._wrap``)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import safeexec.restricted as package
from safeexec.restricted.guards import GuardError, RuntimeClass
from safeexec.restricted.views.sqlite_views import SqliteConnection
from safeexec.restricted.workdir_files import WorkdirFile

# Classes left plain, each with why: none is an object the code holds whose class it could name.
_PLAIN = {
    "cell.ViewSet": "a typing Protocol, never instantiated",
    "enum_view._CheckedEnumType": "a metaclass; the code cannot read type() of a class",
    "futures_view.DoneAndNotDoneFutures": "a namedtuple of futures (its methods are tuple's)",
    "guards.RuntimeClass": "this metaclass itself",
    "guards._PatternClassType": "a RuntimeClass metaclass of class-pattern stand-ins",
    "guards.TextSink": "a typing Protocol, never instantiated",
    "guards._Denials": "a thread-local the code never reaches",
    "guards._SafeFormatter": "a string.Formatter only the runtime calls",
    "guards._SinkProxy": "an io ABC the printer writes to; the code never holds it",
    "stdlib_wrappers._FunctionContextManager": "subclasses contextlib's ABC-based manager",
    "transformer.SafeexecTransformer": "the compiler, host side only",
    "transformer.CountingTransformer": "the compiler, host side only",
    "warnings_view.WarningMessage": "a frozen dataclass of strings and numbers",
    "warnings_view._Filter": "a frozen dataclass of a filter's fields",
}


def _runtime_classes() -> list[tuple[str, type]]:
    found = []
    # The runtime package holds the core and its views; the crawler lives outside it.
    for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        module = importlib.import_module(info.name)
        leaf = info.name.rsplit(".", 1)[-1]
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and value.__module__ == module.__name__
                and not issubclass(value, BaseException)  # exceptions carry no runtime helper
            ):
                found.append((f"{leaf}.{name}", value))
    return found


def test_every_runtime_class_is_sealed_or_says_why_not() -> None:
    unsealed = {name for name, cls in _runtime_classes() if not isinstance(cls, RuntimeClass)}
    assert unsealed == set(_PLAIN), sorted(unsealed ^ set(_PLAIN))


@pytest.mark.parametrize("cls", [SqliteConnection, WorkdirFile])
def test_a_runtime_class_refuses_attribute_writes_and_deletes(cls: type) -> None:
    with pytest.raises(GuardError, match="cannot be changed"):
        cls._open = print  # type: ignore[attr-defined]
    with pytest.raises(GuardError, match="cannot be changed"):
        delattr(cls, "__init__")
