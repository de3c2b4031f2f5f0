"""The DSL's static types: JSON-shaped values, lists carrying a maximum length.

A list's ``bound`` is the most items it can hold, a map's the most keys; ``CAPPED`` marks one
whose size only a runtime cap bounds (tool results, ``split``), replaced by the session's
``max_items`` when a program is checked and enforced on every such value at run time.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from safeexec.dsl.makers import maker
from safeexec.model.codec import JSONValue

__all__ = [
    "ANY",
    "BOOL",
    "CAPPED",
    "FLOAT",
    "INT",
    "NONE",
    "STR",
    "DType",
    "Kind",
    "assignable",
    "from_hint",
    "from_schema",
    "join",
    "list_of",
    "map_of",
    "optional",
    "record",
    "with_cap",
]

CAPPED = -1


class Kind(StrEnum):
    ANY = "any"
    INT = "int"
    FLOAT = "float"
    STR = "str"
    BOOL = "bool"
    NONE = "none"
    LIST = "list"
    RECORD = "record"
    MAP = "map"
    OPTIONAL = "optional"


@dataclass(frozen=True, slots=True)
class DType:
    """One static type; ``item`` is a list's item, a map's value or an optional's inner type."""

    kind: Kind
    item: DType | None = None
    fields: tuple[tuple[str, DType], ...] = ()
    bound: int = 0

    def field(self, name: str) -> DType | None:
        return dict(self.fields).get(name)

    @property
    def numeric(self) -> bool:
        return self.kind in (Kind.INT, Kind.FLOAT, Kind.ANY)

    def __str__(self) -> str:
        if self.kind is Kind.LIST:
            size = "≤cap" if self.bound == CAPPED else f"≤{self.bound}"
            return f"list[{self.item}] ({size})"
        if self.kind is Kind.MAP:
            return f"map[str, {self.item}]"
        if self.kind is Kind.OPTIONAL:
            return f"{self.item} | None"
        if self.kind is Kind.RECORD:
            return "{" + ", ".join(f"{k}: {v}" for k, v in self.fields) + "}"
        return self.kind.value


ANY = DType(Kind.ANY)
INT = DType(Kind.INT)
FLOAT = DType(Kind.FLOAT)
STR = DType(Kind.STR)
BOOL = DType(Kind.BOOL)
NONE = DType(Kind.NONE)
# DType(kind, item, fields, bound), made faster: the checker makes one per list, record or
# optional it types.
_dtype: typing.Callable[[Kind, DType | None, tuple[tuple[str, DType], ...], int], DType] = maker(
    DType
)


def list_of(item: DType, bound: int) -> DType:
    return _dtype(Kind.LIST, item, (), bound)


def map_of(value: DType, bound: int = CAPPED) -> DType:
    return _dtype(Kind.MAP, value, (), bound)


def record(fields: Mapping[str, DType]) -> DType:
    return _dtype(Kind.RECORD, None, tuple(fields.items()), 0)


def optional(inner: DType) -> DType:
    if inner.kind in (Kind.OPTIONAL, Kind.NONE, Kind.ANY):
        return inner
    return _dtype(Kind.OPTIONAL, inner, (), 0)


def with_cap(t: DType, cap: int) -> DType:
    """``t`` with every ``CAPPED`` list bound replaced by ``cap``."""
    if t.item is None and not t.fields and t.bound != CAPPED:
        return t  # a scalar (most of a tool result's fields): nothing to replace
    item = None if t.item is None else with_cap(t.item, cap)
    fields = tuple((k, with_cap(v, cap)) for k, v in t.fields)
    bound = cap if t.bound == CAPPED else t.bound
    return _dtype(t.kind, item, fields, bound)


def assignable(source: DType, target: DType) -> bool:
    """Whether a value of type ``source`` fits where ``target`` is expected."""
    if source.kind is Kind.ANY or target.kind is Kind.ANY:
        return True
    if target.kind is Kind.OPTIONAL:
        assert target.item is not None
        return source.kind is Kind.NONE or assignable(_strip(source), target.item)
    if source.kind is Kind.OPTIONAL:
        return False
    if source.kind is Kind.INT and target.kind is Kind.FLOAT:
        return True
    if source.kind is not target.kind:
        if source.kind is Kind.RECORD and target.kind is Kind.MAP:
            assert target.item is not None
            return all(assignable(v, target.item) for _, v in source.fields)
        return False
    if source.kind in (Kind.LIST, Kind.MAP):
        assert source.item is not None and target.item is not None
        return assignable(source.item, target.item)
    if source.kind is Kind.RECORD:
        mine = dict(source.fields)
        return all(k in mine and assignable(mine[k], v) for k, v in target.fields)
    return True


def _strip(t: DType) -> DType:
    return t.item if t.kind is Kind.OPTIONAL and t.item is not None else t


def join(a: DType, b: DType) -> DType:
    """The least type both ``a`` and ``b`` fit (``ANY`` when they share no shape)."""
    if a == b:
        return a
    if Kind.ANY in (a.kind, b.kind):
        return ANY
    if a.kind is Kind.NONE:
        return optional(b)
    if b.kind is Kind.NONE:
        return optional(a)
    if Kind.OPTIONAL in (a.kind, b.kind):
        return optional(join(_strip(a), _strip(b)))
    if {a.kind, b.kind} == {Kind.INT, Kind.FLOAT}:
        return FLOAT
    if a.kind is not b.kind:
        return ANY
    if a.kind is Kind.LIST:
        assert a.item is not None and b.item is not None
        return list_of(join(a.item, b.item), max(a.bound, b.bound))
    if a.kind is Kind.MAP:
        assert a.item is not None and b.item is not None
        return map_of(join(a.item, b.item), max(a.bound, b.bound))
    if a.kind is Kind.RECORD:
        theirs = dict(b.fields)
        common = {k: join(v, theirs[k]) for k, v in a.fields if k in theirs}
        return record(common)
    return a


def from_schema(schema: JSONValue) -> DType:
    """The type of a JSON Schema (as :func:`safeexec.capabilities.gateway.tool` writes them)."""
    if not isinstance(schema, dict):
        return ANY
    if "anyOf" in schema:
        options = schema["anyOf"]
        if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
            other = next(o for o in options if o != {"type": "null"})
            return optional(from_schema(other))
        return ANY
    if "enum" in schema:
        values = schema["enum"]
        kinds = {type(v) for v in values} if isinstance(values, list) else set()
        return (
            {str: STR, int: INT, bool: BOOL, float: FLOAT}.get(next(iter(kinds)), ANY)
            if len(kinds) == 1
            else ANY
        )
    kind = schema.get("type")
    simple = {"string": STR, "integer": INT, "number": FLOAT, "boolean": BOOL, "null": NONE}
    if isinstance(kind, str) and kind in simple:
        return simple[kind]
    if kind == "array":
        return list_of(from_schema(schema.get("items")), CAPPED)
    if kind == "object":
        properties = schema.get("properties")
        if isinstance(properties, dict):
            return record({k: from_schema(v) for k, v in properties.items()})
        return map_of(from_schema(schema.get("additionalProperties", {})))
    return ANY


def from_hint(hint: object) -> DType:
    """The type of a tool function's return annotation (``ANY`` for what JSON cannot say)."""
    if hint is None or hint is type(None):
        return NONE
    simple = {str: STR, int: INT, float: FLOAT, bool: BOOL}
    if isinstance(hint, type) and hint in simple:
        return simple[hint]
    if typing.is_typeddict(hint):
        try:
            hints = typing.get_type_hints(hint)
        except Exception:
            return ANY
        return record({k: from_hint(v) for k, v in hints.items()})
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is list and len(args) == 1:
        return list_of(from_hint(args[0]), CAPPED)
    if origin is dict and len(args) == 2 and args[0] is str:
        return map_of(from_hint(args[1]))
    if origin is typing.Literal and args:
        kinds = {type(a) for a in args}
        return from_hint(next(iter(kinds))) if len(kinds) == 1 else ANY
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            return optional(from_hint(rest[0]))
    return ANY
