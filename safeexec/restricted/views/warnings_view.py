"""The ``warnings`` view: warnings the code issues, filtered and caught per cell.

In-process the real module's filters and ``showwarning`` are the host's, process-wide: a
``simplefilter("error")`` would turn the host's own warnings into exceptions. The view keeps its
own filter list for each executor (``catch_warnings`` saves and restores it, and records into
the list it returns), and shows a warning as ``Category: message`` on the cell's output. Filters
match ``message`` and ``module`` as literal prefixes, not regular expressions (a pattern the
code writes would run unbudgeted in the host). Warnings that library code raises through the
real module go the process's way; the code cannot see or change that.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from safeexec.restricted.guards import GuardError, RuntimeClass

if TYPE_CHECKING:
    from safeexec.restricted.cell import Cell

__all__ = ["warnings_view"]

_ACTIONS = ("error", "ignore", "always", "default", "module", "once")
_IGNORED_BY_DEFAULT = (PendingDeprecationWarning, ImportWarning, ResourceWarning)


@dataclass(frozen=True, slots=True)
class WarningMessage:
    """One caught warning, as ``catch_warnings(record=True)`` lists it."""

    message: Warning
    category: type[Warning]
    filename: str
    lineno: int
    line: str | None = None
    file: None = None
    source: None = None

    def __reduce__(self) -> str | tuple[object, ...]:
        raise GuardError("runtime objects cannot be pickled or copied in restricted mode")

    def __str__(self) -> str:
        return (
            f"{{message : {self.message!r}, category : {self.category.__name__!r}, "
            f"filename : {self.filename!r}, lineno : {self.lineno}, line : {self.line!r}}}"
        )


@dataclass(frozen=True, slots=True)
class _Filter:
    action: str
    message: str
    category: type[Warning]
    module: str
    lineno: int


class _State(metaclass=RuntimeClass):
    """One executor's filters, the innermost recording list, and what was shown once."""

    def __init__(self) -> None:
        self.filters: list[_Filter] = []
        self.records: list[WarningMessage] | None = None
        self.shown: set[tuple[str, type[Warning]]] = set()


def _category(category: object) -> type[Warning]:
    if not (isinstance(category, type) and issubclass(category, Warning)):
        raise TypeError(f"category must be a Warning subclass, not {category!r}")
    return category


def warnings_view(cell: Cell) -> Mapping[str, dict[str, object]]:
    """The attributes of the ``warnings`` view for one cell."""
    state = _State()

    def add(item: _Filter, append: bool) -> None:
        if item.action not in _ACTIONS:
            raise ValueError(f"invalid action: {item.action!r}")
        if item in state.filters:
            state.filters.remove(item)
        state.filters.insert(len(state.filters) if append else 0, item)

    def simplefilter(
        action: str, category: object = Warning, lineno: int = 0, append: bool = False
    ) -> None:
        add(_Filter(str(action), "", _category(category), "", int(lineno)), bool(append))

    def filterwarnings(
        action: str,
        message: str = "",
        category: object = Warning,
        module: str = "",
        lineno: int = 0,
        append: bool = False,
    ) -> None:
        item = _Filter(str(action), str(message), _category(category), str(module), int(lineno))
        add(item, bool(append))

    def resetwarnings() -> None:
        state.filters.clear()

    def action_for(text: str, category: type[Warning]) -> str:
        for item in state.filters:
            if (
                issubclass(category, item.category)
                and text.lower().startswith(item.message.lower())
                and "__sandbox__".startswith(item.module)
            ):
                return item.action
        # The interpreter's defaults for a program's own code (``__main__``).
        return "ignore" if issubclass(category, _IGNORED_BY_DEFAULT) else "default"

    def warn(
        message: object, category: object = None, stacklevel: int = 1, source: object = None
    ) -> None:
        if isinstance(message, Warning):
            kind: type[Warning] = type(message)
            instance = message
        else:
            kind = UserWarning if category is None else _category(category)
            instance = kind(message)
        text = str(instance)
        action = action_for(text, kind)
        if action == "error":
            raise instance
        if action == "ignore":
            return
        if action in ("default", "module", "once"):
            if (text, kind) in state.shown:
                return
            state.shown.add((text, kind))
        if state.records is not None:
            state.records.append(WarningMessage(instance, kind, "<cell>", 0))
            return
        cell.sink.write(f"{kind.__name__}: {text}\n")

    class catch_warnings:
        """``warnings.catch_warnings``: filters restored on exit; ``record=True`` lists them."""

        __slots__ = ("_action", "_record", "_saved")

        def __init__(
            self,
            *,
            record: bool = False,
            action: str | None = None,
            category: object = Warning,
            lineno: int = 0,
            append: bool = False,
        ) -> None:
            self._record = bool(record)
            self._saved: tuple[list[_Filter], list[WarningMessage] | None, set[object]] | None = (
                None
            )
            self._action: tuple[str | None, object, int, bool] = (action, category, lineno, append)

        def __reduce__(self) -> str | tuple[object, ...]:
            raise GuardError("runtime objects cannot be pickled or copied in restricted mode")

        def __enter__(self) -> list[WarningMessage] | None:
            if self._saved is not None:
                raise RuntimeError(f"Cannot enter {self!r} twice")
            self._saved = (list(state.filters), state.records, set(state.shown))
            action, category, lineno, append = self._action
            if action is not None:
                simplefilter(action, category, lineno, append)
            if not self._record:
                return None
            state.records = []
            state.shown = set()
            return state.records

        def __exit__(self, *exc: object) -> None:
            if self._saved is None:
                raise RuntimeError(f"Cannot exit {self!r} without entering first")
            filters, records, shown = self._saved
            state.filters[:] = filters
            state.records = records
            state.shown = shown  # type: ignore[assignment]

    return {
        "warnings": {
            "warn": warn,
            "simplefilter": simplefilter,
            "filterwarnings": filterwarnings,
            "resetwarnings": resetwarnings,
            "catch_warnings": catch_warnings,
            "WarningMessage": WarningMessage,
        }
    }
