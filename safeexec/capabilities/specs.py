"""Tools as data: a :class:`ToolSpec` made from an annotated host function, the JSON Schema of its
parameters, the JSON-plain copies that cross the tool boundary, and validation against the schema.

Everything here is pure: no tokens, no calls. :mod:`safeexec.capabilities.gateway` grants specs as
capabilities and runs checked calls (and re-exports the public names).
"""

from __future__ import annotations

import inspect
import json
import math
import os
import threading
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NewType

from safeexec.capabilities.effects import Effect
from safeexec.capabilities.targets import BoundPath, CheckedURL
from safeexec.errors import CapabilityError
from safeexec.model.codec import JSONValue
from safeexec.model.fieldwise import Fieldwise

__all__ = [
    "AnswerSink",
    "AnyJSON",
    "Effect",
    "ToolDescriptor",
    "ToolSpec",
    "Url",
    "canonical_json",
    "hint_text",
    "is_answer_sink",
    "to_plain",
    "tool",
]

Url = NewType("Url", str)
"""Annotate a tool parameter with ``Url`` to have its host checked (network-effect tools)."""

AnyJSON = NewType("AnyJSON", object)
"""Annotate a tool parameter with ``AnyJSON`` to accept any JSON value (copied, exact types)."""

_ANY_JSON_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")

_MAX_DEPTH = 64
# What one JSON-plain copy may hold: the copy runs in the host, where no budget interrupts it.
_MAX_ITEMS = 1_000_000
_MAX_TEXT_CHARS = 64 * 1024 * 1024
_MAX_INT_BITS = 14_000  # about Python's 4300-digit limit on int-to-text conversion


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ToolDescriptor(Fieldwise):
    """What sandboxed code may know about a granted tool: its name and parameter schema."""

    name: str
    description: str = ""
    parameters: Mapping[str, JSONValue] = field(default_factory=dict)


# -- JSON-plain values -------------------------------------------------------------------------


def to_plain(value: object, *, where: str = "value") -> JSONValue:
    """A fresh JSON-plain copy of ``value`` with exact types (``bool``/``int``/``float``/``str``,
    lists, string-keyed dicts); tuples become lists; anything else raises ``TypeError``.

    At most ``_MAX_ITEMS`` values and ``_MAX_TEXT_CHARS`` characters of strings and keys
    (``ValueError`` beyond), so a hostile value cannot keep the host copying.
    """
    return _plain(value, where, 0, [_MAX_ITEMS, _MAX_TEXT_CHARS])


def _plain(value: object, where: str, depth: int, left: list[int]) -> JSONValue:
    if depth > _MAX_DEPTH:
        raise TypeError(f"{where}: nested deeper than {_MAX_DEPTH} levels")
    left[0] -= 1
    if left[0] < 0:
        raise ValueError(f"{where}: more than {_MAX_ITEMS} values in one JSON value")
    kind = type(value)
    if kind is str:
        left[1] -= len(typing.cast(str, value))
        if left[1] < 0:
            raise ValueError(f"{where}: more than {_MAX_TEXT_CHARS} characters of text")
        return typing.cast(str, value)
    if kind is int and typing.cast(int, value).bit_length() > _MAX_INT_BITS:
        raise ValueError(f"{where}: an integer of more than {_MAX_INT_BITS} bits has no JSON form")
    if value is None or kind is bool or kind is int:
        return typing.cast(JSONValue, value)
    if kind is float:
        if not math.isfinite(typing.cast(float, value)):
            raise TypeError(f"{where}: {value!r} has no JSON form")
        return typing.cast(float, value)
    if kind is list or kind is tuple:
        items = typing.cast("list[object]", value)
        if len(items) > left[0]:
            raise ValueError(f"{where}: more than {_MAX_ITEMS} values in one JSON value")
        return [_plain(v, f"{where}[{i}]", depth + 1, left) for i, v in enumerate(items)]
    if kind is dict:
        out: dict[str, JSONValue] = {}
        for key, item in typing.cast("dict[object, object]", value).items():
            if type(key) is not str:
                raise TypeError(f"{where}: dict keys must be str, got {type(key).__name__}")
            left[1] -= len(key)
            out[key] = _plain(item, f"{where}[{key!r}]", depth + 1, left)
        return out
    raise TypeError(f"{where}: a {kind.__name__} cannot cross the tool boundary (JSON data only)")


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: JSONValue) -> str:
    """Sorted, compact JSON: what argument and result digests are computed over."""
    return _CANONICAL.encode(value)


# -- tool specs --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ToolSpec:
    """A host function offered as a tool: its schema, its effects, and how to confine it.

    Specs compare and hash by identity: two decorations of one function are two tools.
    """

    name: str
    description: str
    parameters: Mapping[str, JSONValue]
    effects: tuple[Effect, ...]
    function: Callable[..., object] = field(repr=False, compare=False)
    root: Path | None = None
    scope_parameter: str | None = None

    def descriptor(self) -> ToolDescriptor:
        return ToolDescriptor(
            name=self.name, description=self.description, parameters=self.parameters
        )

    def __call__(self, *args: object, **kwargs: object) -> object:
        """Call the underlying function directly (host code only; not checked or audited)."""
        return self.function(*args, **kwargs)


def tool(
    function: Callable[..., object] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    effects: Iterable[Effect | str] = (),
    root: Path | str | None = None,
    scope_parameter: str | None = None,
) -> typing.Any:
    """Make a :class:`ToolSpec` from a fully annotated function (usable as ``@tool`` or
    ``@tool(effects=["write"], root=...)``).

    Parameters must be annotated with ``str``, ``int``, ``float``, ``bool``, ``Path`` or
    ``BoundPath`` (resolved beneath ``root``), ``Url`` or ``CheckedURL``, ``AnyJSON`` (any JSON
    value), ``Literal[...]``, ``list[...]``, ``dict[str, ...]`` or an ``Optional`` of those;
    ``*args``/``**kwargs`` are refused (signatures are closed).

    A path parameter reaches the function as a :class:`BoundPath`, never a pathname: it was
    resolved from a descriptor of ``root`` with no links followed, and opens only through the
    descriptor of its directory (``read_text``, ``read_bytes``, ``write_text``, ``write_bytes``,
    ``open``), for the duration of the call. A URL parameter arrives as a :class:`CheckedURL`
    whose host was resolved once and every address checked; connect with ``connect()`` to the
    pinned ``address`` (sending ``host`` as the ``Host`` header), never by resolving again.
    ``scope_parameter`` names the argument a capability's scope restricts (default: the first
    ``Path`` or ``Url`` parameter).
    """

    def build(func: Callable[..., object]) -> ToolSpec:
        return _build_spec(
            func,
            name=name,
            description=description,
            effects=effects,
            root=root,
            scope_parameter=scope_parameter,
        )

    return build if function is None else build(function)


def _build_spec(
    func: Callable[..., object],
    *,
    name: str | None,
    description: str | None,
    effects: Iterable[Effect | str],
    root: Path | str | None,
    scope_parameter: str | None,
) -> ToolSpec:
    tool_name = name or str(getattr(func, "__name__", ""))
    if not tool_name.isidentifier() or tool_name.startswith("_"):
        raise CapabilityError(
            f"tool name={tool_name!r} is not a public identifier; pass name='...'"
        )
    try:
        effect_set = tuple(dict.fromkeys(Effect(e) for e in effects))
    except ValueError as exc:
        raise CapabilityError(
            f"tool {tool_name!r}: {exc}; effects are {[e.value for e in Effect]}"
        ) from None
    try:
        hints = typing.get_type_hints(func)
    except Exception as exc:
        raise CapabilityError(f"tool {tool_name!r}: cannot resolve type hints: {exc}") from exc
    properties: dict[str, JSONValue] = {}
    required: list[JSONValue] = []
    first_scoped: str | None = None
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise CapabilityError(
                f"tool {tool_name!r}: *{param.name} makes the signature open; "
                "declare every parameter"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise CapabilityError(
                f"tool {tool_name!r}: positional-only parameter {param.name!r}; "
                "tools are called with named arguments"
            )
        if param.name not in hints:
            raise CapabilityError(
                f"tool {tool_name!r}: parameter {param.name!r} has no type annotation; "
                "annotate it so arguments can be validated"
            )
        schema = _schema(hints[param.name], f"tool {tool_name!r} parameter {param.name!r}")
        if param.default is not param.empty:
            schema["default"] = to_plain(param.default, where=f"default of {param.name!r}")
        else:
            required.append(param.name)
        properties[param.name] = schema
        if first_scoped is None and schema.get("format") in ("path", "uri"):
            first_scoped = param.name
    takes_path = any(isinstance(p, dict) and p.get("format") == "path" for p in properties.values())
    if takes_path and root is None:
        raise CapabilityError(
            f"tool {tool_name!r} takes a Path; pass root=... (paths resolve beneath it)"
        )
    if scope_parameter is not None and scope_parameter not in properties:
        raise CapabilityError(
            f"tool {tool_name!r}: scope_parameter={scope_parameter!r} is not a parameter"
        )
    parameters: dict[str, JSONValue] = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    return ToolSpec(
        name=tool_name,
        description=description if description is not None else inspect.getdoc(func) or "",
        parameters=parameters,
        effects=effect_set,
        function=func,
        root=None if root is None else Path(os.path.realpath(root)),
        scope_parameter=scope_parameter or first_scoped,
    )


# The scalar annotations and their JSON Schema type names: one table both directions read.
_SCALAR_TYPES: tuple[tuple[type, str], ...] = (
    (str, "string"),
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
)


def hint_text(schema: Mapping[str, JSONValue]) -> str:
    """The annotation a parameter schema made by :func:`tool` came from, as text (``int``,
    ``list[str]``, ``Literal["a", "b"]``, ``path``, ``str | None``, ...), for prompts and docs."""
    if "enum" in schema and isinstance(schema["enum"], list):
        return "Literal[" + ", ".join(json.dumps(v) for v in schema["enum"]) + "]"
    if "anyOf" in schema and isinstance(schema["anyOf"], list):
        first = schema["anyOf"][0]
        return (hint_text(first) if isinstance(first, dict) else "object") + " | None"
    kind = schema.get("type")
    if isinstance(kind, list):
        return "any JSON value"
    if kind == "string" and schema.get("format") in ("path", "uri"):
        return "path" if schema.get("format") == "path" else "url"
    items, values = schema.get("items"), schema.get("additionalProperties")
    if kind == "array":
        return f"list[{hint_text(items) if isinstance(items, dict) else 'object'}]"
    if kind == "object":
        return f"dict[str, {hint_text(values) if isinstance(values, dict) else 'object'}]"
    return next((t.__name__ for t, name in _SCALAR_TYPES if name == kind), "object")


def _schema(hint: object, where: str) -> dict[str, JSONValue]:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    for scalar, name in _SCALAR_TYPES:
        if hint is scalar:
            return {"type": name}
    if hint is Url:
        return {"type": "string", "format": "uri"}
    if hint is AnyJSON:
        return {"type": list(_ANY_JSON_TYPES)}
    if hint is CheckedURL:
        return {"type": "string", "format": "uri"}
    if hint is BoundPath or (isinstance(hint, type) and issubclass(hint, Path)):
        return {"type": "string", "format": "path"}
    if origin is typing.Literal:
        return {"enum": [to_plain(a, where=where) for a in args]}
    if origin is list and len(args) == 1:
        return {"type": "array", "items": _schema(args[0], where)}
    if origin is dict and len(args) == 2 and args[0] is str:
        return {"type": "object", "additionalProperties": _schema(args[1], where)}
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return {"anyOf": [_schema(rest[0], where), {"type": "null"}]}
    raise CapabilityError(
        f"{where}: type {hint!r} has no JSON Schema here; use str, int, float, bool, Path, Url, "
        "Literal, list[...], dict[str, ...] or Optional[...] of those"
    )


# -- argument validation -------------------------------------------------------------------------


class _Refusal(Exception):
    """An argument or call the gateway refuses (message goes back to the code)."""


def _validate(schema: Mapping[str, JSONValue], value: object, where: str) -> object:
    if "anyOf" in schema:
        if value is None:
            return None
        options = schema["anyOf"]
        assert isinstance(options, list) and isinstance(options[0], dict)
        return _validate(options[0], value, where)
    if "enum" in schema:
        choices = schema["enum"]
        assert isinstance(choices, list)
        for choice in choices:
            if type(choice) is type(value) and choice == value:
                return choice
        raise _Refusal(f"{where}: {value!r} is not one of {choices!r}")
    kind = schema.get("type")
    if isinstance(kind, list) and tuple(kind) == _ANY_JSON_TYPES:
        try:
            return to_plain(value, where=where)
        except (TypeError, ValueError) as exc:
            raise _Refusal(str(exc)) from None
    if kind == "string":
        if type(value) is not str:
            raise _Refusal(f"{where}: expected a string, got {type(value).__name__}")
        return value
    if kind == "integer":
        if type(value) is not int:
            raise _Refusal(f"{where}: expected an integer, got {type(value).__name__}")
        return value
    if kind == "number":
        if type(value) not in (int, float) or not math.isfinite(value):  # type: ignore[arg-type]
            raise _Refusal(f"{where}: expected a finite number, got {value!r}")
        return float(value)  # type: ignore[arg-type]
    if kind == "boolean":
        if type(value) is not bool:
            raise _Refusal(f"{where}: expected true or false, got {type(value).__name__}")
        return value
    if kind == "array":
        if type(value) is not list:
            raise _Refusal(f"{where}: expected a list, got {type(value).__name__}")
        items = schema["items"]
        assert isinstance(items, dict)
        return [_validate(items, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if kind == "object":
        if type(value) is not dict:
            raise _Refusal(f"{where}: expected an object, got {type(value).__name__}")
        values = schema["additionalProperties"]
        assert isinstance(values, dict)
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _Refusal(f"{where}: keys must be strings")
            out[key] = _validate(values, item, f"{where}[{key!r}]")
        return out
    raise _Refusal(f"{where}: unsupported schema")  # pragma: no cover - schemas come from _schema


def _bind(name: str, order: tuple[str, ...], arguments: JSONValue) -> dict[str, JSONValue]:
    """Bind the wire shape ``{"args": [...], "kwargs": {...}}`` to named parameters."""
    if type(arguments) is not dict or set(arguments) - {"args", "kwargs"}:
        raise _Refusal(f"{name}: arguments must be {{'args': [...], 'kwargs': {{...}}}}")
    args = arguments.get("args", [])
    kwargs = arguments.get("kwargs", {})
    if type(args) is not list or type(kwargs) is not dict:
        raise _Refusal(f"{name}: arguments must be {{'args': [...], 'kwargs': {{...}}}}")
    if len(args) > len(order):
        raise _Refusal(f"{name}() takes at most {len(order)} positional arguments")
    bound: dict[str, JSONValue] = dict(zip(order, args, strict=False))
    for key, value in kwargs.items():
        if key in bound:
            raise _Refusal(f"{name}() got multiple values for argument {key!r}")
        bound[key] = value
    return bound


class AnswerSink:
    """A tool whose only effect is to hand one JSON value back to the harness (a framework's
    ``final_answer``): calling ``spec`` keeps a plain copy of its argument here, for :meth:`take`.

    Nothing outside this object changes, so a policy need not list it: ``Session.grant`` takes
    ``spec`` without a ``[capabilities.<name>]`` entry (an entry, ``grantable = false`` included,
    still decides, and the session's tool-call budget is charged as for any tool).
    """

    def __init__(
        self, name: str = "final_answer", description: str = "Give the final answer."
    ) -> None:
        self._lock = threading.Lock()
        self._values: list[JSONValue] = []
        self.spec: ToolSpec = tool(self._record, name=name, description=description)

    def _record(self, answer: AnyJSON) -> None:
        copied = to_plain(answer, where="the answer")
        with self._lock:
            self._values[:] = [copied]

    def take(self) -> list[JSONValue]:
        """The answer given since the last take (a one-item list), or ``[]``; clears it."""
        with self._lock:
            values, self._values = self._values, []
        return values


def is_answer_sink(spec: ToolSpec) -> bool:
    """Whether ``spec`` is an :class:`AnswerSink`'s tool (decided by the function it calls)."""
    function = spec.function
    return (
        isinstance(getattr(function, "__self__", None), AnswerSink)
        and getattr(function, "__func__", None) is AnswerSink._record
    )
