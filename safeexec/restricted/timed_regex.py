"""``re`` for in-process runs, on the time-limited ``regex`` engine.

A backtracking pattern (``(a|aa)+$`` on a long non-matching string) is one C call that runs no
Python code, so no budget tick can stop it and the host thread hangs. In-process, the ``re`` view
is built from these wrappers instead: every match runs on ``regex`` with ``timeout=`` the time
left in the run (its operation budget's deadline), and a timeout stops the budget, so the run
ends as a time-out. Patterns and matches are proxies: the engine's own objects (``m.re`` is an
untimed pattern) never reach the code.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import regex

from safeexec.restricted.guards import GuardError, RuntimeClass

if TYPE_CHECKING:
    from safeexec.restricted.cell import Cell

__all__ = ["TimedMatch", "TimedPattern", "timed_re_attributes"]

# Without a deadline (a run with no time limit), one match may take this long.
_DEFAULT_SECONDS = 5.0
_FLAGS: tuple[str, ...] = (
    "A", "ASCII", "I", "IGNORECASE", "L", "LOCALE", "M", "MULTILINE",
    "S", "DOTALL", "X", "VERBOSE", "U", "UNICODE",
)  # fmt: skip


class TimedPattern(metaclass=RuntimeClass):
    """A compiled pattern whose every search runs with the run's time limit."""

    __slots__ = ("_cell", "_pattern")
    _cell: Cell
    _pattern: Any

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise GuardError("patterns come from re.compile() only")

    @classmethod
    def _wrap(cls, pattern: Any, cell: Cell) -> TimedPattern:
        view = object.__new__(cls)
        object.__setattr__(view, "_pattern", pattern)
        object.__setattr__(view, "_cell", cell)
        return view

    def __setattr__(self, name: str, value: object) -> None:
        raise GuardError("patterns are read-only in restricted mode")

    def __reduce__(self) -> str | tuple[object, ...]:
        raise GuardError("patterns cannot be pickled or copied in restricted mode")

    @property
    def pattern(self) -> str | bytes:
        return self._pattern.pattern

    @property
    def flags(self) -> int:
        return int(self._pattern.flags)

    @property
    def groups(self) -> int:
        return int(self._pattern.groups)

    @property
    def groupindex(self) -> dict[str, int]:
        return dict(self._pattern.groupindex)

    def _run(self, method: str, *args: object, **kwargs: object) -> Any:
        return _timed(self._cell, getattr(self._pattern, method), *args, **kwargs)

    def match(self, string: str, pos: int = 0, endpos: int | None = None) -> TimedMatch | None:
        return _match(self, self._run("match", string, pos, endpos))

    def search(self, string: str, pos: int = 0, endpos: int | None = None) -> TimedMatch | None:
        return _match(self, self._run("search", string, pos, endpos))

    def fullmatch(self, string: str, pos: int = 0, endpos: int | None = None) -> TimedMatch | None:
        return _match(self, self._run("fullmatch", string, pos, endpos))

    def findall(self, string: str, pos: int = 0, endpos: int | None = None) -> list[Any]:
        return list(self._run("findall", string, pos, endpos))

    def finditer(
        self, string: str, pos: int = 0, endpos: int | None = None
    ) -> Iterator[TimedMatch]:
        # All matches are found under one time limit, before the first is handed out.
        found = self._run("findall", string, pos, endpos, overlapped=False)
        del found
        for match in list(self._run("finditer", string, pos, endpos)):
            yield TimedMatch._wrap(match, self)

    def split(self, string: str, maxsplit: int = 0) -> list[Any]:
        return list(self._run("split", string, maxsplit))

    def sub(self, repl: object, string: str, count: int = 0) -> str:
        return str(self._run("sub", _replacement(self, repl), string, count))

    def subn(self, repl: object, string: str, count: int = 0) -> tuple[str, int]:
        text, number = self._run("subn", _replacement(self, repl), string, count)
        return str(text), int(number)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TimedPattern) and self._pattern == other._pattern

    def __hash__(self) -> int:
        return hash(self._pattern)

    def __repr__(self) -> str:
        return f"re.compile({self.pattern!r})"


class TimedMatch(metaclass=RuntimeClass):
    """A match: its groups and positions, and ``re`` as the timed pattern it came from."""

    __slots__ = ("_match", "re")
    _match: Any
    re: TimedPattern

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise GuardError("matches come from a pattern only")

    @classmethod
    def _wrap(cls, match: Any, pattern: TimedPattern) -> TimedMatch:
        view = object.__new__(cls)
        object.__setattr__(view, "_match", match)
        object.__setattr__(view, "re", pattern)
        return view

    def __setattr__(self, name: str, value: object) -> None:
        raise GuardError("matches are read-only in restricted mode")

    def __reduce__(self) -> str | tuple[object, ...]:
        raise GuardError("matches cannot be pickled or copied in restricted mode")

    @property
    def string(self) -> str | bytes:
        return self._match.string

    @property
    def pos(self) -> int:
        return int(self._match.pos)

    @property
    def endpos(self) -> int:
        return int(self._match.endpos)

    @property
    def lastindex(self) -> int | None:
        return self._match.lastindex

    @property
    def lastgroup(self) -> str | None:
        return self._match.lastgroup

    def group(self, *groups: int | str) -> Any:
        return self._match.group(*groups)

    def groups(self, default: object = None) -> tuple[Any, ...]:
        return tuple(self._match.groups(default))

    def groupdict(self, default: object = None) -> dict[str, Any]:
        return dict(self._match.groupdict(default))

    def start(self, group: int | str = 0) -> int:
        return int(self._match.start(group))

    def end(self, group: int | str = 0) -> int:
        return int(self._match.end(group))

    def span(self, group: int | str = 0) -> tuple[int, int]:
        start, end = self._match.span(group)
        return int(start), int(end)

    def expand(self, template: str) -> str:
        return str(self._match.expand(template))

    def __getitem__(self, group: int | str) -> Any:
        return self._match[group]

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"<re.Match object; span={self.span()!r}, match={self.group()!r}>"


def _timed(cell: Cell, call: Callable[..., Any], *args: object, **kw: object) -> Any:
    budget = cell.budget
    if budget.exhausted:
        raise RuntimeError("the operation budget is exhausted")
    deadline = budget.deadline
    seconds = _DEFAULT_SECONDS if deadline is None else max(0.001, deadline - time.monotonic())
    try:
        return call(*args, timeout=seconds, **kw)
    except TimeoutError:
        budget.stop(budget.deadline_reason)
        raise RuntimeError("a regular expression ran past the run's time limit") from None


def _match(pattern: TimedPattern, match: Any) -> TimedMatch | None:
    return None if match is None else TimedMatch._wrap(match, pattern)


def _replacement(pattern: TimedPattern, repl: object) -> object:
    if callable(repl):
        return lambda match: repl(TimedMatch._wrap(match, pattern))
    return repl


def _compile(cell: Cell, pattern: object, flags: int = 0) -> TimedPattern:
    if isinstance(pattern, TimedPattern):
        return pattern
    return TimedPattern._wrap(regex.compile(pattern, int(flags)), cell)


def timed_re_attributes(cell: Cell) -> dict[str, object]:
    """The in-process ``re`` view: the same names as ``re``, on the timed engine."""

    def compile(pattern: object, flags: int = 0) -> TimedPattern:
        return _compile(cell, pattern, flags)

    def match(pattern: object, string: str, flags: int = 0) -> TimedMatch | None:
        return compile(pattern, flags).match(string)

    def search(pattern: object, string: str, flags: int = 0) -> TimedMatch | None:
        return compile(pattern, flags).search(string)

    def fullmatch(pattern: object, string: str, flags: int = 0) -> TimedMatch | None:
        return compile(pattern, flags).fullmatch(string)

    def findall(pattern: object, string: str, flags: int = 0) -> list[Any]:
        return compile(pattern, flags).findall(string)

    def finditer(pattern: object, string: str, flags: int = 0) -> Iterator[TimedMatch]:
        return compile(pattern, flags).finditer(string)

    def split(pattern: object, string: str, maxsplit: int = 0, flags: int = 0) -> list[Any]:
        return compile(pattern, flags).split(string, maxsplit)

    def sub(pattern: object, repl: object, string: str, count: int = 0, flags: int = 0) -> str:
        return compile(pattern, flags).sub(repl, string, count)

    def subn(
        pattern: object, repl: object, string: str, count: int = 0, flags: int = 0
    ) -> tuple[str, int]:
        return compile(pattern, flags).subn(repl, string, count)

    attributes: dict[str, object] = {
        "compile": compile,
        "match": match,
        "search": search,
        "fullmatch": fullmatch,
        "findall": findall,
        "finditer": finditer,
        "split": split,
        "sub": sub,
        "subn": subn,
        "escape": regex.escape,
        "error": regex.error,
        "PatternError": regex.error,  # re's name for error from Python 3.13
        "Pattern": TimedPattern,
        "Match": TimedMatch,
        "NOFLAG": 0,
    }
    attributes.update({name: int(getattr(regex, name)) for name in _FLAGS})
    return attributes
