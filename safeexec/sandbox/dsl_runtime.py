"""The ops registry, run-time side: what compiled DSL code calls (``dsl_<op>`` and the helpers),
with the caps the plan assumed enforced on every value they touch.

It runs where the compiled program runs: in the confined worker (``dsl``), or in the host for the
opt-in ``dsl-inprocess``. Everything here handles JSON-plain values only (tools return copies;
literals are JSON). A :class:`DslRuntime` is made per run; its ``namespace()`` is all compiled
code can name.

Every helper that makes a string, a list or a record first asks :meth:`DslRuntime.charge` with
the size the value will have (or a bound on it), and makes it only if that fits the run's
``max_text_chars`` / ``max_items``: one place where a value's size meets its cap, before the
value exists. The compiler emits no Python construct that makes a value by itself (no list,
dict or f-string nodes, no bare arithmetic), so nothing else can.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Iterator, Mapping
from itertools import repeat
from typing import Any, Protocol

__all__ = ["DslLimitError", "DslRuntime", "DslRuntimeError", "render_value"]

_MAX_INT_BITS = 4096
_INT_LIMIT = 1 << _MAX_INT_BITS
# What JSON adds to a string's characters (ensure_ascii=False): quotes, and an escape for each
# control character, quote and backslash (\n is two characters, \u0001 six).
_ESCAPE_EXTRA = {chr(c): 5 for c in range(32)} | dict.fromkeys('\n\r\t\b\f"\\', 1)
# The longest float in fixed notation has 309 digits before the point; grouping adds a third.
_FLOAT_DIGITS = 309 + 309 // 3
# Sign, point, percent sign, exponent: what a format adds to the digits at most.
_FORMAT_SLACK = 8
# How many characters a character can become in upper() or lower() ("ΐ".upper() is three).
_CASE_GROWTH = 3
_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "-": operator.sub,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
}


class TextSink(Protocol):
    def write(self, text: str, /) -> int: ...


class DslRuntimeError(Exception):
    """A DSL program failed at run time (a missing field, an empty list, a bad conversion)."""


class DslLimitError(DslRuntimeError):
    """A value or count went past a bound the plan assumed (the program stops there)."""


def render_value(value: object) -> str:
    """How a returned or printed value is shown: strings as they are, the rest as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def rendered_chars(value: object, limit: int) -> int:
    """``len(render_value(value))``, without making it; once the count passes ``limit`` the walk
    stops and returns what it has (more than ``limit``). Shared sub-values count each time they
    are shown, as the rendering repeats them."""
    if isinstance(value, str):
        return len(value)
    total = 0
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            total += _json_text_chars(item)
        elif kind is list:
            total += 2 * max(1, len(item))  # brackets and ", " between items
            stack.extend(item)
        elif kind is dict:
            total += 2 * max(1, len(item)) + 2 * len(item)  # braces, ", " and ": "
            for key, entry in item.items():
                total += _json_text_chars(key if type(key) is str else str(key))
                stack.append(entry)
        elif kind is float:
            total += max(9, len(repr(item)))  # "-Infinity"
        elif kind is int:
            total += len(str(item))  # bit-capped: at most 1234 digits
        else:  # True, False, None
            total += 5
        if total > limit:
            return total
    return total


def _json_text_chars(text: str) -> int:
    """``len(json.dumps(text, ensure_ascii=False))``, counted in C without making it."""
    size = len(text) + 2
    if text.isprintable():  # no control characters: only quotes and backslashes grow
        return size + text.count('"') + text.count("\\")
    return size + sum(text.count(c) * extra for c, extra in _ESCAPE_EXTRA.items())


def formatted_chars(value: object, spec: str) -> int:
    """A bound on ``len(format(value, spec))`` for the specs the checker admits, from the width
    and precision digits and the value's own size (never by formatting it)."""
    head, _, tail = spec.partition(".")
    # A digit fill character joins the width's digits: the number read is at least the width.
    width = int("".join(c for c in head if c.isdigit()) or 0)
    precision = int("".join(c for c in tail if c.isdigit()) or 0)
    kind = type(value)
    if kind is str:
        body = len(value)  # type: ignore[arg-type]
    elif kind is float:
        body = _FLOAT_DIGITS + precision
    elif kind is int or kind is bool:
        digits = len(str(abs(int(value))))  # type: ignore[call-overload]
        # An int under a float type ('f', 'e', '%') is shown as the float it converts to.
        body = max(digits + digits // 3, _FLOAT_DIGITS) + precision
    else:
        raise DslRuntimeError(
            f"format spec {spec!r} applies to numbers and strings, not {_kind(value)}"
        )
    return max(width, body + _FORMAT_SLACK)


class DslRuntime:
    """The helpers of one run; counts iterations and calls against the plan's bounds and charges
    every value it makes against the caps."""

    def __init__(
        self,
        *,
        max_iterations: int,
        call_bounds: Mapping[str, int],
        max_items: int,
        max_text_chars: int,
        sink: TextSink,
        operations: Iterator[int] | None = None,
    ) -> None:
        self.max_iterations = max_iterations
        self.call_bounds = dict(call_bounds)
        self.max_items = max_items
        self.max_text_chars = max_text_chars
        self.sink = sink
        # The run's operation budget's counter (``OperationBudget.counter``): the watchdog stops
        # a run (time, memory, interrupt) by exhausting it; every iteration, op and call draws.
        self._operations: Iterator[int] = repeat(0) if operations is None else operations
        self.iterations = 0
        self.calls: dict[str, int] = {}
        self.returned = False
        self.result: object = None

    # -- the one place a value's size meets its cap --------------------------------------------

    def charge(
        self, what: str, *, chars: int = 0, items: int = 0, item_cap: int | None = None
    ) -> None:
        """Refuse to make ``what`` if it would be a string of more than ``max_text_chars``
        characters or a list or record of more than ``max_items`` items (``chars``/``items``:
        its size, or a bound on it). Every helper that makes a value calls this first.

        ``item_cap`` replaces ``max_items`` for a list whose size the plan fixed and already
        counted against ``max_iterations`` (a ``range`` with literal ends)."""
        if chars > self.max_text_chars:
            raise DslLimitError(
                f"{what} makes a string longer than {self.max_text_chars} characters ({chars})"
            )
        cap = self.max_items if item_cap is None else item_cap
        if items > cap:
            raise DslLimitError(f"{what} holds {items} items, more than the cap of {cap}")

    def shown_chars(self, value: object) -> int:
        """The length of ``value`` as shown (``render_value``), counted no further than the cap."""
        return rendered_chars(value, self.max_text_chars)

    def show(self, value: object, what: str) -> str:
        """``render_value(value)``, charged first."""
        self.charge(what, chars=self.shown_chars(value))
        return render_value(value)

    def shown_result(self) -> str | None:
        """The returned value as shown (charged), or ``None`` if the program returned nothing."""
        return self.show(self.result, "the returned value") if self.returned else None

    # -- metering ---------------------------------------------------------------------------------

    def tick(self, count: int = 1) -> None:
        if next(self._operations, None) is None:
            raise DslLimitError("the run was stopped")
        self.iterations += count
        if self.iterations > self.max_iterations:
            raise _over_iterations(self.max_iterations)

    def capped(self, value: object, where: str) -> object:
        """``value`` (a tool's result) after charging every list, record and string in it."""
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, list):
                self.charge(where, items=len(item))
                stack.extend(item)
            elif isinstance(item, dict):
                self.charge(where, items=len(item))
                stack.extend(item.values())
            elif isinstance(item, str):
                self.charge(where, chars=len(item))
        return value

    def metered_tool(self, name: str, function: Callable[..., object]) -> Callable[..., object]:
        bound = self.call_bounds.get(name, 0)

        def call(**kwargs: object) -> object:
            if next(self._operations, None) is None:
                raise DslLimitError("the run was stopped")
            made = self.calls.get(name, 0) + 1
            if made > bound:
                raise DslLimitError(f"`{name}` called more than the planned {bound} time(s)")
            # The arguments cross to the host as JSON text: that text is a value made too.
            self.charge(f"the arguments of {name}()", chars=self.shown_chars(kwargs))
            self.calls[name] = made
            return self.capped(function(**kwargs), f"the result of {name}()")

        call.__name__ = name
        return call

    def namespace(
        self, tools: Mapping[str, Callable[..., object]]
    ) -> dict[str, Callable[..., object]]:
        """The names compiled code may use: metered tools and ``dsl_*`` helpers."""
        out = {name: self.metered_tool(name, fn) for name, fn in tools.items()}
        for exposed, attr in _EXPOSED:
            out[exposed] = getattr(self, attr)
        return out

    # -- helpers the compiler emits ------------------------------------------------------------

    def h_loop(self, values: object, bound: int) -> Iterator[object]:
        items = self._items(values, "for")
        if len(items) > bound:
            raise DslLimitError(f"a loop over {len(items)} items; the plan bounded it to {bound}")
        # ``tick`` inlined: this is the cost of every iteration of every loop.
        operations, limit = self._operations, self.max_iterations
        for item in items:
            if next(operations, None) is None:
                raise DslLimitError("the run was stopped")
            self.iterations += 1
            if self.iterations > limit:
                raise _over_iterations(limit)
            yield item

    def h_list(self, *items: object) -> list[object]:
        """A list literal ``[a, b, ...]``."""
        self.charge("a list", items=len(items))
        return list(items)

    def h_record(self, *pairs: object) -> dict[str, object]:
        """A record literal ``{"k": v, ...}``, from its keys and values in turn."""
        self.charge("a record", items=len(pairs) // 2)
        return dict(zip(pairs[::2], pairs[1::2], strict=True))  # type: ignore[arg-type]

    def h_format(self, *parts: Any) -> str:
        """An f-string: its first literal text, then (value, spec, text) for each ``{...}``;
        an empty spec shows the value as the DSL does (JSON), another formats it in Python."""
        total = len(parts[0])
        for i in range(1, len(parts), 3):
            value, spec, text = parts[i], parts[i + 1], parts[i + 2]
            total += len(text) + (formatted_chars(value, spec) if spec else self.shown_chars(value))
        self.charge("an f-string", chars=total)
        pieces = [parts[0]]
        for i in range(1, len(parts), 3):
            value, spec, text = parts[i], parts[i + 1], parts[i + 2]
            pieces.append(_formatted(value, spec) if spec else render_value(value))
            pieces.append(text)
        return "".join(pieces)

    def h_field(self, value: object, name: str) -> object:
        if not isinstance(value, dict):
            raise DslRuntimeError(f"`.{name}` needs a record, got {_kind(value)}")
        if name not in value:
            known = ", ".join(sorted(value)[:10])
            raise DslRuntimeError(f"the record has no field `{name}` (fields: {known})")
        return value[name]

    def h_index(self, value: object, key: object) -> object:
        try:
            if isinstance(value, dict) and isinstance(key, str):
                return value[key]
            if isinstance(value, list | str) and type(key) is int:
                return value[key]  # an item already made, or one character
        except (KeyError, IndexError):
            raise DslRuntimeError(f"no item {key!r} in a {_kind(value)}") from None
        raise DslRuntimeError(f"cannot index a {_kind(value)} with {_kind(key)}")

    def h_add(self, a: Any, b: Any) -> object:
        if type(a) is int and type(b) is int:  # the common case first (counters, indexes)
            value = a + b
            if -_INT_LIMIT < value < _INT_LIMIT:  # as _int_checked, without the call
                return value
            raise _too_wide()
        if type(a) is float and type(b) is float:
            return a + b
        if isinstance(a, str) and isinstance(b, str):
            self.charge("`+`", chars=len(a) + len(b))
            return a + b
        if isinstance(a, list) and isinstance(b, list):
            self.charge("`+`", items=len(a) + len(b))
            return a + b
        if _number(a) and _number(b):
            return self._int_checked(a + b)
        raise DslRuntimeError(f"`+` cannot combine {_kind(a)} and {_kind(b)}")

    def h_mul(self, a: Any, b: Any) -> object:
        # Numbers only: the DSL has no repetition of strings or lists.
        if _number(a) and _number(b):
            return self._int_checked(a * b)
        raise DslRuntimeError(f"`*` cannot combine {_kind(a)} and {_kind(b)}")

    def h_arith(self, a: Any, op: str, b: Any) -> object:
        """``-``, ``/``, ``//`` and ``%``: numbers only (``%`` on a string would format it)."""
        if _number(a) and _number(b):
            return self._int_checked(_ARITH[op](a, b))
        raise DslRuntimeError(f"`{op}` cannot combine {_kind(a)} and {_kind(b)}")

    def h_give(self, value: object) -> None:
        self.returned = True
        self.result = value

    def _int_checked(self, value: Any) -> object:
        # |value| < 2**_MAX_INT_BITS, i.e. at most that many bits, without a method call.
        if type(value) is int and not -_INT_LIMIT < value < _INT_LIMIT:
            raise _too_wide()
        return value

    def _items(self, values: object, op: str) -> list[Any]:
        if isinstance(values, list):
            return values
        if isinstance(values, dict):
            self.charge(f"{op} over a record's keys", items=len(values))
            return list(values)
        raise DslRuntimeError(f"{op} needs a list, got {_kind(values)}")

    def _each(self, values: object, op: str) -> list[Any]:
        items = self._items(values, op)
        self.tick(len(items))
        return items

    def _made(self, values: object, op: str) -> list[Any]:
        """``_each`` for an op that makes a list of (at most) as many items as it reads."""
        items = self._each(values, op)
        self.charge(f"{op}()", items=len(items))
        return items

    # -- ops (names as in safeexec.dsl.ops) -------------------------------------------------------

    def op_len(self, value: object) -> int:
        if isinstance(value, list | str | dict):
            return len(value)
        raise DslRuntimeError(f"len() needs a list, string or record, got {_kind(value)}")

    def op_count(self, values: object, fn: Callable[[Any], object] | None = None) -> int:
        items = self._each(values, "count")
        return len(items) if fn is None else sum(1 for x in items if fn(x))

    def op_sum(self, values: object, fn: Callable[[Any], Any] | None = None) -> object:
        items = self._each(values, "sum")
        numbers = items if fn is None else [fn(x) for x in items]
        if not all(_number(v) for v in numbers):
            raise DslRuntimeError("sum() adds numbers only")
        return self._int_checked(sum(numbers))

    def op_avg(self, values: object, fn: Callable[[Any], Any] | None = None) -> float:
        items = self._each(values, "avg")
        if not items:
            raise DslRuntimeError("avg() of an empty list")
        total = self.op_sum(items, fn)
        return float(total) / len(items)  # type: ignore[arg-type]

    def op_min(self, values: object, fn: Callable[[Any], Any] | None = None) -> object:
        return self._extreme(values, fn, min, "min")

    def op_max(self, values: object, fn: Callable[[Any], Any] | None = None) -> object:
        return self._extreme(values, fn, max, "max")

    def op_min_by(self, values: object, fn: Callable[[Any], Any]) -> object:
        return self._extreme(values, fn, min, "min_by")

    def op_max_by(self, values: object, fn: Callable[[Any], Any]) -> object:
        return self._extreme(values, fn, max, "max_by")

    def _extreme(
        self, values: object, fn: Callable[[Any], Any] | None, pick: Any, op: str
    ) -> object:
        items = self._each(values, op)
        if not items:
            raise DslRuntimeError(f"{op}() of an empty list")
        try:
            return pick(items, key=fn) if fn is not None else pick(items)
        except TypeError as exc:
            raise DslRuntimeError(f"{op}(): values cannot be compared ({exc})") from None

    def op_map(self, values: object, fn: Callable[[Any], object]) -> list[object]:
        return [fn(x) for x in self._made(values, "map")]

    def op_filter(self, values: object, fn: Callable[[Any], object]) -> list[object]:
        return [x for x in self._made(values, "filter") if fn(x)]

    op_where = op_filter

    def op_sort(
        self, values: object, fn: Callable[[Any], Any] | None = None, *, reverse: bool = False
    ) -> list[object]:
        items = self._made(values, "sort")
        try:
            return sorted(items, key=fn, reverse=bool(reverse))
        except TypeError as exc:
            raise DslRuntimeError(f"sort(): values cannot be compared ({exc})") from None

    def op_sort_by(
        self, values: object, fn: Callable[[Any], Any], *, reverse: bool = False
    ) -> list[object]:
        return self.op_sort(values, fn, reverse=reverse)

    def op_unique(self, values: object, fn: Callable[[Any], Any] | None = None) -> list[object]:
        seen: set[str] = set()
        out = []
        for x in self._made(values, "unique"):
            key = x if fn is None else fn(x)
            self.charge("unique()'s key", chars=self.shown_chars(key))
            shown = json.dumps(key, sort_keys=True)
            if shown not in seen:
                seen.add(shown)
                out.append(x)
        return out

    def op_reverse(self, values: object, fn: object = None) -> list[object]:
        return list(reversed(self._made(values, "reverse")))

    def op_any(self, values: object, fn: Callable[[Any], object] | None = None) -> bool:
        return any(x if fn is None else fn(x) for x in self._each(values, "any"))

    def op_all(self, values: object, fn: Callable[[Any], object] | None = None) -> bool:
        return all(x if fn is None else fn(x) for x in self._each(values, "all"))

    def op_take(self, values: object, count: int) -> list[object]:
        if type(count) is not int or count < 0:
            raise DslRuntimeError(f"take() needs a count >= 0, got {count!r}")
        items = self._items(values, "take")
        self.charge("take()", items=min(count, len(items)))
        return items[:count]

    def op_first(self, values: object) -> object:
        items = self._items(values, "first")
        if not items:
            raise DslRuntimeError("first() of an empty list")
        return items[0]

    def op_last(self, values: object) -> object:
        items = self._items(values, "last")
        if not items:
            raise DslRuntimeError("last() of an empty list")
        return items[-1]

    def op_range(self, start: int, stop: int | None = None, *, bound: int) -> list[int]:
        """``bound`` is the checker's: the literal size, or the cap for computed ends."""
        low, high = (0, start) if stop is None else (start, stop)
        if type(low) is not int or type(high) is not int:
            raise DslRuntimeError("range() takes ints")
        self.charge("range()", items=high - low, item_cap=bound)
        self.tick(max(0, high - low))
        return list(range(low, high))

    def op_group(self, values: object, fn: Callable[[Any], Any]) -> dict[str, list[object]]:
        items = self._made(values, "group")  # at most one key, and one place, per item
        out: dict[str, list[object]] = {}
        for x in items:
            key = fn(x)
            if type(key) not in (str, int, float, bool):
                raise DslRuntimeError(f"group() keys are strings or numbers, got {_kind(key)}")
            out.setdefault(str(key), []).append(x)
        return out

    def op_join(self, values: object, sep: str = "") -> str:
        items = self._each(values, "join")
        if not all(isinstance(x, str) for x in items) or not isinstance(sep, str):
            raise DslRuntimeError("join() joins strings with a string")
        self.charge("join()", chars=sum(len(x) for x in items) + len(sep) * len(items))
        return sep.join(items)

    def op_split(self, text: str, sep: str | None = None) -> list[str]:
        if not isinstance(text, str) or not isinstance(sep, str | None):
            raise DslRuntimeError("split() takes a string")
        if sep == "":
            raise DslRuntimeError("split() needs a non-empty separator")
        # Splitting at most max_items times makes at most one piece more than the cap allows.
        self.charge("split()", chars=len(text))
        pieces = text.split(sep, self.max_items)
        self.charge("split()", items=len(pieces) + (len(pieces) > self.max_items))
        return pieces

    def op_keys(self, value: object) -> list[str]:
        if not isinstance(value, dict):
            raise DslRuntimeError(f"keys() needs a record, got {_kind(value)}")
        self.charge("keys()", items=len(value))
        return list(value)

    def op_values(self, value: object) -> list[object]:
        if not isinstance(value, dict):
            raise DslRuntimeError(f"values() needs a record, got {_kind(value)}")
        self.charge("values()", items=len(value))
        return list(value.values())

    def op_get(self, value: object, key: str, default: object = None) -> object:
        if not isinstance(value, dict):
            raise DslRuntimeError(f"get() needs a record, got {_kind(value)}")
        return value.get(key, default)

    def op_str(self, value: object) -> str:
        return self.show(value, "str()")

    def op_int(self, value: object) -> int:
        try:
            made = int(value)  # type: ignore[call-overload]
        except (TypeError, ValueError, OverflowError):
            raise DslRuntimeError(f"int() cannot convert {_preview(value)}") from None
        self._int_checked(made)
        return made

    def op_float(self, value: object) -> float:
        try:
            return float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError, OverflowError):
            raise DslRuntimeError(f"float() cannot convert {_preview(value)}") from None

    def op_round(self, value: float, digits: int | None = None) -> float:
        return round(value, digits) if digits is not None else round(value)

    def op_abs(self, value: float) -> float:
        return abs(value)

    def op_lower(self, text: str) -> str:
        self.charge("lower()", chars=_recased_chars(text))
        return text.lower()

    def op_upper(self, text: str) -> str:
        self.charge("upper()", chars=_recased_chars(text))
        return text.upper()

    def op_strip(self, text: str) -> str:
        self.charge("strip()", chars=len(text))
        return text.strip()

    def op_replace(self, text: str, old: str, new: str) -> str:
        if not isinstance(text, str) or not isinstance(old, str) or not isinstance(new, str):
            raise DslRuntimeError("replace() takes three strings")
        # Exact: every occurrence (and, for an empty ``old``, every gap) is replaced.
        self.charge("replace()", chars=len(text) + text.count(old) * (len(new) - len(old)))
        return text.replace(old, new)

    def op_startswith(self, text: str, prefix: str) -> bool:
        return text.startswith(prefix)

    def op_endswith(self, text: str, suffix: str) -> bool:
        return text.endswith(suffix)

    def op_ord(self, char: str) -> int:
        if not isinstance(char, str) or len(char) != 1:
            raise DslRuntimeError("ord() takes one character")
        return ord(char)

    def op_chr(self, code: int) -> str:
        if type(code) is not int or not 0 <= code <= 0x10FFFF:
            raise DslRuntimeError(f"chr() takes a code point, got {code!r}")
        return chr(code)

    def op_print(self, *values: object) -> None:
        self.charge("print()", chars=sum(self.shown_chars(v) + 1 for v in values))
        self.sink.write(" ".join(render_value(v) for v in values) + "\n")


# ``dsl_<op>`` for every ``op_<op>`` method, and the compiler's helpers: computed once.
HELPERS = ("loop", "list", "record", "format", "field", "index", "add", "mul", "arith", "give")
_EXPOSED: tuple[tuple[str, str], ...] = (
    *(("dsl_" + a[3:], a) for a in sorted(vars(DslRuntime)) if a.startswith("op_")),
    *(("dsl_" + h, "h_" + h) for h in HELPERS),
)


def _formatted(value: object, spec: str) -> str:
    try:
        return format(value, spec)
    except (TypeError, ValueError, OverflowError) as exc:
        raise DslRuntimeError(f"format spec {spec!r} does not fit {_kind(value)}: {exc}") from None


def _recased_chars(text: object) -> int:
    if not isinstance(text, str):
        raise DslRuntimeError(f"needs a string, got {_kind(text)}")
    return len(text) if text.isascii() else len(text) * _CASE_GROWTH


def _too_wide() -> DslLimitError:
    return DslLimitError(f"an integer of more than {_MAX_INT_BITS} bits")


def _over_iterations(limit: int) -> DslLimitError:
    return DslLimitError(f"more than {limit} iterations; the plan bounded them")


def _number(value: object) -> bool:
    return type(value) in (int, float)


def _preview(value: object) -> str:
    """A value as shown, cut to 40 characters for a message (a list or record by its kind:
    showing it whole could be any size)."""
    if isinstance(value, list | dict):
        return f"a {_kind(value)}"
    return render_value(value[:40] if isinstance(value, str) else value)[:40]


def _kind(value: object) -> str:
    return {
        dict: "record",
        list: "list",
        str: "string",
        bool: "bool",
        int: "int",
        float: "float",
    }.get(type(value), "none" if value is None else "value")
