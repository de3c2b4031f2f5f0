"""Stable JSON forms for the frozen value types in :mod:`safeexec.model.values`.

Everything that crosses a process boundary or lands in the audit log goes through
:func:`to_json` / :func:`from_json`. Dataclasses become objects keyed by field name, ``StrEnum``
members their value, tuples lists. A union of dataclasses is resolved by each class's ``kind``
class variable, which is written into the object. Decoding is strict: an unknown field, a missing
required field or a value of the wrong type raises :class:`ValueError` naming the path.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Mapping
from functools import cache

__all__ = ["JSONValue", "field_names", "from_json", "to_json"]

JSONValue = None | bool | int | float | str | list["JSONValue"] | dict[str, "JSONValue"]

_T = typing.TypeVar("_T")


_FIELD_NAMES: dict[type, tuple[str, ...] | None] = {}


def field_names(cls: type) -> tuple[str, ...] | None:
    """The field names of dataclass ``cls`` in order, or None if it is not one (cached per
    class: the audit log walks every event twice, to mask and to encode it)."""
    names = _FIELD_NAMES.get(cls, ())
    if names == ():
        is_dataclass = dataclasses.is_dataclass(cls)
        names = tuple(f.name for f in dataclasses.fields(cls)) if is_dataclass else None
        _FIELD_NAMES[cls] = names
    return names


def to_json(value: object) -> JSONValue:
    """The JSON-compatible form of a model value (dataclass, enum, tuple, mapping, scalar)."""
    cls = type(value)
    if value is None or cls is str or cls is int or cls is float or cls is bool:
        return value  # type: ignore[return-value]
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, bool | int | float | str):
        return value
    names = field_names(cls)
    if names is not None:
        out: dict[str, JSONValue] = {}
        kind = getattr(cls, "kind", None)
        if isinstance(kind, str):
            out["kind"] = kind
        for name in names:
            out[name] = to_json(getattr(value, name))
        return out
    if isinstance(value, tuple | list):
        return [to_json(item) for item in value]
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    raise TypeError(f"no JSON form for value of type {type(value).__name__!r}")


def from_json(cls: type[_T], data: object) -> _T:
    """Rebuild an instance of ``cls`` from its :func:`to_json` form; strict about shape and type."""
    return typing.cast(_T, _decode(cls, data, "$"))


@cache
def _hints(cls: type) -> dict[str, object]:
    return typing.get_type_hints(cls)


def _decode(tp: object, data: object, path: str) -> object:
    origin = typing.get_origin(tp)
    if tp is typing.Any or tp is object:
        return data
    if tp is type(None) or tp is None:
        if data is not None:
            raise ValueError(f"{path}: expected null, got {type(data).__name__}")
        return None
    if origin in (typing.Union, types.UnionType):
        return _decode_union(typing.get_args(tp), data, path)
    if origin is tuple:
        args = typing.get_args(tp)
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a list, got {type(data).__name__}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], item, f"{path}[{i}]") for i, item in enumerate(data))
        if len(args) != len(data):
            raise ValueError(f"{path}: expected {len(args)} items, got {len(data)}")
        pairs = enumerate(zip(args, data, strict=True))
        return tuple(_decode(a, item, f"{path}[{i}]") for i, (a, item) in pairs)
    if origin in (dict, Mapping, typing.Mapping) or tp is dict:
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected an object, got {type(data).__name__}")
        args = typing.get_args(tp) or (str, object)
        return types.MappingProxyType(
            {str(k): _decode(args[1], v, f"{path}.{k}") for k, v in data.items()}
        )
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(data)
        except ValueError:
            allowed = ", ".join(repr(m.value) for m in tp)
            raise ValueError(f"{path}: {data!r} is not one of {allowed}") from None
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _decode_dataclass(tp, data, path)
    if tp is float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise ValueError(f"{path}: expected a number, got {type(data).__name__}")
        return float(data)
    if tp is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise ValueError(f"{path}: expected an integer, got {type(data).__name__}")
        return data
    if tp in (str, bool):
        if not isinstance(data, tp):
            raise ValueError(f"{path}: expected {tp.__name__}, got {type(data).__name__}")
        return data
    raise TypeError(f"{path}: no JSON decoder for type {tp!r}")


def _decode_union(args: tuple[object, ...], data: object, path: str) -> object:
    if data is None and type(None) in args:
        return None
    tagged = [a for a in args if isinstance(a, type) and isinstance(getattr(a, "kind", None), str)]
    if tagged and isinstance(data, dict):
        for cls in tagged:
            if data.get("kind") == cls.kind:  # type: ignore[attr-defined]
                return _decode_dataclass(cls, data, path)
        raise ValueError(f"{path}: unknown kind {data.get('kind')!r}")
    errors = []
    for arg in args:
        if arg is type(None):
            continue
        try:
            return _decode(arg, data, path)
        except ValueError as exc:
            errors.append(str(exc))
    raise ValueError("; ".join(errors) or f"{path}: no union member matched")


def _decode_dataclass(cls: type, data: object, path: str) -> object:
    if not isinstance(data, dict):
        got = type(data).__name__
        raise ValueError(f"{path}: expected an object for {cls.__name__}, got {got}")
    hints = _hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = set(data) - set(fields) - {"kind"}
    if unknown:
        raise ValueError(f"{path}: unknown field(s) {sorted(unknown)} for {cls.__name__}")
    kwargs = {}
    for name, field in fields.items():
        if name in data:
            kwargs[name] = _decode(hints[name], data[name], f"{path}.{name}")
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise ValueError(f"{path}: missing field {name!r} for {cls.__name__}")
    return cls(**kwargs)
