"""The ops registry, run-time side: what compiled DSL code calls (``dsl_<op>`` and the helpers),
with the caps the plan assumed enforced on every value they touch.

Everything here handles JSON-plain values only (tools return copies; literals are JSON). A
:class:`DslRuntime` is made per run; its ``namespace()`` is all compiled code can name.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from itertools import repeat
from typing import Any, Protocol

__all__ = ["DslLimitError", "DslRuntime", "DslRuntimeError", "render_value"]

_MAX_INT_BITS = 4096
_INT_LIMIT = 1 << _MAX_INT_BITS


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


class DslRuntime:
    """The helpers of one run; counts iterations and calls against the plan's bounds."""

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

    # -- metering ---------------------------------------------------------------------------------

    def tick(self, count: int = 1) -> None:
        if next(self._operations, None) is None:
            raise DslLimitError("the run was stopped")
        self.iterations += count
        if self.iterations > self.max_iterations:
            raise _over_iterations(self.max_iterations)

    def capped(self, value: object, where: str) -> object:
        """``value`` after checking every list in it against ``max_items``."""
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, list):
                if len(item) > self.max_items:
                    raise DslLimitError(
                        f"{where} holds {len(item)} items, more than the cap of {self.max_items}"
                    )
                stack.extend(item)
            elif isinstance(item, dict):
                if len(item) > self.max_items:
                    raise DslLimitError(
                        f"{where} holds {len(item)} keys, more than the cap of {self.max_items}"
                    )
                stack.extend(item.values())
        return value

    def metered_tool(self, name: str, function: Callable[..., object]) -> Callable[..., object]:
        bound = self.call_bounds.get(name, 0)

        def call(**kwargs: object) -> object:
            if next(self._operations, None) is None:
                raise DslLimitError("the run was stopped")
            made = self.calls.get(name, 0) + 1
            if made > bound:
                raise DslLimitError(f"`{name}` called more than the planned {bound} time(s)")
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
                return value[key]
        except (KeyError, IndexError):
            raise DslRuntimeError(f"no item {key!r} in a {_kind(value)}") from None
        raise DslRuntimeError(f"cannot index a {_kind(value)} with {_kind(key)}")

    def h_add(self, a: Any, b: Any) -> object:
        if type(a) is int and type(b) is int:  # the common case first (counters, indexes)
            value = a + b
            if -_INT_LIMIT < value < _INT_LIMIT:  # as _int_checked, without the call
                return value
            raise _too_wide()
        if isinstance(a, str) and isinstance(b, str):
            if len(a) + len(b) > self.max_text_chars:
                raise DslLimitError(f"a string longer than {self.max_text_chars} characters")
            return a + b
        if isinstance(a, list) and isinstance(b, list):
            if len(a) + len(b) > self.max_items:
                raise DslLimitError(f"a list longer than the cap of {self.max_items} items")
            return a + b
        if _number(a) and _number(b):
            return self._int_checked(a + b)
        raise DslRuntimeError(f"`+` cannot combine {_kind(a)} and {_kind(b)}")

    def h_mul(self, a: Any, b: Any) -> object:
        if _number(a) and _number(b):
            return self._int_checked(a * b)
        raise DslRuntimeError(f"`*` cannot combine {_kind(a)} and {_kind(b)}")

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
            return list(values)
        raise DslRuntimeError(f"{op} needs a list, got {_kind(values)}")

    def _each(self, values: object, op: str) -> list[Any]:
        items = self._items(values, op)
        self.tick(len(items))
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
        return [fn(x) for x in self._each(values, "map")]

    def op_filter(self, values: object, fn: Callable[[Any], object]) -> list[object]:
        return [x for x in self._each(values, "filter") if fn(x)]

    op_where = op_filter

    def op_sort(
        self, values: object, fn: Callable[[Any], Any] | None = None, *, reverse: bool = False
    ) -> list[object]:
        items = self._each(values, "sort")
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
        for x in self._each(values, "unique"):
            key = json.dumps(x if fn is None else fn(x), sort_keys=True)
            if key not in seen:
                seen.add(key)
                out.append(x)
        return out

    def op_reverse(self, values: object, fn: object = None) -> list[object]:
        return list(reversed(self._each(values, "reverse")))

    def op_any(self, values: object, fn: Callable[[Any], object] | None = None) -> bool:
        return any(x if fn is None else fn(x) for x in self._each(values, "any"))

    def op_all(self, values: object, fn: Callable[[Any], object] | None = None) -> bool:
        return all(x if fn is None else fn(x) for x in self._each(values, "all"))

    def op_take(self, values: object, count: int) -> list[object]:
        if type(count) is not int or count < 0:
            raise DslRuntimeError(f"take() needs a count >= 0, got {count!r}")
        return self._items(values, "take")[:count]

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
        if high - low > bound:
            raise DslLimitError(f"range() of {high - low} items, more than the bound of {bound}")
        self.tick(max(0, high - low))
        return list(range(low, high))

    def op_group(self, values: object, fn: Callable[[Any], Any]) -> dict[str, list[object]]:
        out: dict[str, list[object]] = {}
        for x in self._each(values, "group"):
            out.setdefault(str(fn(x)), []).append(x)
        return out

    def op_join(self, values: object, sep: str = "") -> str:
        items = self._each(values, "join")
        if not all(isinstance(x, str) for x in items) or not isinstance(sep, str):
            raise DslRuntimeError("join() joins strings with a string")
        if sum(len(x) for x in items) + len(sep) * len(items) > self.max_text_chars:
            raise DslLimitError(f"a string longer than {self.max_text_chars} characters")
        return sep.join(items)

    def op_split(self, text: str, sep: str | None = None) -> list[str]:
        if not isinstance(text, str):
            raise DslRuntimeError("split() takes a string")
        if sep == "":
            raise DslRuntimeError("split() needs a non-empty separator")
        return self.capped(text.split(sep), "split()")  # type: ignore[return-value]

    def op_keys(self, value: object) -> list[str]:
        if not isinstance(value, dict):
            raise DslRuntimeError(f"keys() needs a record, got {_kind(value)}")
        return list(value)

    def op_values(self, value: object) -> list[object]:
        if not isinstance(value, dict):
            raise DslRuntimeError(f"values() needs a record, got {_kind(value)}")
        return list(value.values())

    def op_get(self, value: object, key: str, default: object = None) -> object:
        if not isinstance(value, dict):
            raise DslRuntimeError(f"get() needs a record, got {_kind(value)}")
        return value.get(key, default)

    def op_str(self, value: object) -> str:
        return render_value(value)

    def op_int(self, value: object) -> int:
        try:
            return int(value)  # type: ignore[call-overload]
        except (TypeError, ValueError, OverflowError):
            raise DslRuntimeError(f"int() cannot convert {render_value(value)[:40]}") from None

    def op_float(self, value: object) -> float:
        try:
            return float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise DslRuntimeError(f"float() cannot convert {render_value(value)[:40]}") from None

    def op_round(self, value: float, digits: int | None = None) -> float:
        return round(value, digits) if digits is not None else round(value)

    def op_abs(self, value: float) -> float:
        return abs(value)

    def op_lower(self, text: str) -> str:
        return text.lower()

    def op_upper(self, text: str) -> str:
        return text.upper()

    def op_strip(self, text: str) -> str:
        return text.strip()

    def op_replace(self, text: str, old: str, new: str) -> str:
        if old and len(text) // len(old) * len(new) > self.max_text_chars:
            raise DslLimitError(f"a string longer than {self.max_text_chars} characters")
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
        self.sink.write(" ".join(render_value(v) for v in values) + "\n")


# ``dsl_<op>`` for every ``op_<op>`` method, and the compiler's helpers: computed once.
_EXPOSED: tuple[tuple[str, str], ...] = (
    *(("dsl_" + a[3:], a) for a in sorted(vars(DslRuntime)) if a.startswith("op_")),
    *(("dsl_" + h, "h_" + h) for h in ("loop", "field", "index", "add", "mul", "give")),
)


def _too_wide() -> DslLimitError:
    return DslLimitError(f"an integer of more than {_MAX_INT_BITS} bits")


def _over_iterations(limit: int) -> DslLimitError:
    return DslLimitError(f"more than {limit} iterations; the plan bounded them")


def _number(value: object) -> bool:
    return type(value) in (int, float)


def _kind(value: object) -> str:
    return {
        dict: "record",
        list: "list",
        str: "string",
        bool: "bool",
        int: "int",
        float: "float",
    }.get(type(value), "none" if value is None else "value")
