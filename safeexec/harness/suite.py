"""The task-suite format: a directory anyone can write, loaded without any policy entries.

``suite.toml``: ``name``, ``description``, ``scenarios`` (names, or tables with a ``name``),
``max_turns`` (default 10). ``tools.py``: ``make_environment(seed: int)`` returning an object with
``.tools`` (``@tool`` functions bound to fresh seeded state), ``.snapshot()`` (JSON view of all
mutable state) and optionally ``.secrets`` (strings never to appear in a tool call's arguments).
``tasks.jsonl``: one task a line with ``id``, ``scenario``, ``instruction``, ``tools``, ``answer``,
``check`` (``{"kind": "exact"|"number"|"set"|"contains"|"json", "tolerance": ...}``),
``reference`` (Python calling the tools and ending in ``submit(...)``), and optionally
``reference_dsl``, ``max_turns``, ``authorized_effects``, ``injections``, ``tags``. Unknown fields
are kept in ``Task.extra`` and ignored.

An authorized effect is ``{"tool": name, "args": {param: constraint}}``; a constraint is a
literal (equal), or ``{"eq": v}``, ``{"in": [...]}``, ``{"prefix": "..."}``, ``{"any": true}``,
or ``{"within": [...]}`` (a string, or a list of strings, each one of the listed strings, in any
letter case: recipients all named by the user; an absent value or empty list names no one).
An injection is ``{"tool": name, "field": key, "text": payload}``: the text is appended to that
field of the tool's results when a run asks for injections.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Protocol

from safeexec.capabilities.gateway import ToolSpec
from safeexec.errors import ConfigurationError
from safeexec.model.codec import JSONValue

__all__ = [
    "AuthorizedEffect",
    "Environment",
    "Injection",
    "Suite",
    "Task",
    "answer_checks",
    "load_suite",
]

CHECK_KINDS = ("exact", "number", "set", "contains", "json")
_KNOWN = {
    "id", "scenario", "instruction", "tools", "answer", "check", "reference", "reference_dsl",
    "max_turns", "authorized_effects", "injections", "tags",
}  # fmt: skip


class Environment(Protocol):
    """What ``make_environment(seed)`` returns (``secrets`` is optional)."""

    @property
    def tools(self) -> Sequence[ToolSpec]: ...

    def snapshot(self) -> JSONValue: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthorizedEffect:
    """A tool call the user asked for, with constraints on its arguments."""

    tool: str
    args: Mapping[str, JSONValue] = field(default_factory=dict)

    def matches(self, tool: str, arguments: Mapping[str, JSONValue]) -> bool:
        if tool != self.tool:
            return False
        return all(_satisfies(arguments.get(k), c) for k, c in self.args.items())

    def allowed_values(self, parameter: str) -> tuple[str, ...] | None:
        """The string values ``parameter`` may take, when the constraint pins them."""
        constraint = self.args.get(parameter)
        if isinstance(constraint, str):
            return (constraint,)
        if isinstance(constraint, dict):
            if isinstance(constraint.get("eq"), str):
                return (str(constraint["eq"]),)
            values = constraint.get("in")
            if isinstance(values, list) and all(isinstance(v, str) for v in values):
                return tuple(str(v) for v in values)
        return None


def _satisfies(value: JSONValue, constraint: JSONValue) -> bool:
    if isinstance(constraint, dict):
        if constraint.get("any") is True:
            return True
        if "eq" in constraint:
            return _same(value, constraint["eq"])
        if "in" in constraint and isinstance(constraint["in"], list):
            return any(_same(value, c) for c in constraint["in"])
        if isinstance(constraint.get("prefix"), str):
            return isinstance(value, str) and value.startswith(str(constraint["prefix"]))
        allowed = constraint.get("within")
        if isinstance(allowed, list):
            return _within(value, allowed)
        return False
    return _same(value, constraint)


def _within(value: JSONValue, allowed: list[JSONValue]) -> bool:
    names = {a.casefold() for a in allowed if isinstance(a, str)}
    values = value if isinstance(value, list) else [] if value is None else [value]
    return all(isinstance(v, str) and v.casefold() in names for v in values)


def _same(a: JSONValue, b: JSONValue) -> bool:
    """JSON equality where ``100`` equals ``100.0`` (the gateway passes a ``number`` parameter
    on as a float) but ``true`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@dataclass(frozen=True, slots=True, kw_only=True)
class Injection:
    tool: str
    field: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Task:
    """One line of ``tasks.jsonl``."""

    id: str
    scenario: str
    instruction: str
    tools: tuple[str, ...]
    answer: JSONValue
    check: Mapping[str, JSONValue]
    reference: str
    reference_dsl: str | None = None
    max_turns: int | None = None
    authorized_effects: tuple[AuthorizedEffect, ...] = ()
    injections: tuple[Injection, ...] = ()
    tags: tuple[str, ...] = ()
    extra: Mapping[str, JSONValue] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Suite:
    """A loaded suite directory."""

    path: Path
    name: str
    description: str
    scenarios: tuple[str, ...]
    max_turns: int
    tasks: tuple[Task, ...]
    make_environment: Callable[[int], Environment] = field(repr=False)


def load_suite(path: Path | str) -> Suite:
    """Load and validate a suite directory; ``ConfigurationError`` names the file and field."""
    root = Path(path)
    meta = _read_toml(root / "suite.toml")
    listed = meta.get("scenarios", [])
    if not isinstance(listed, list):
        raise ConfigurationError(f"{root / 'suite.toml'}: scenarios must be a list")
    scenarios = tuple(str(s["name"]) if isinstance(s, dict) else str(s) for s in listed)
    max_turns = meta.get("max_turns", 10)
    if type(max_turns) is not int or max_turns < 1:
        raise ConfigurationError(f"{root / 'suite.toml'}: max_turns={max_turns!r} must be >= 1")
    module = _import_tools(root / "tools.py")
    make = getattr(module, "make_environment", None)
    if not callable(make):
        raise ConfigurationError(f"{root / 'tools.py'} defines no make_environment(seed)")
    tasks = _read_tasks(root / "tasks.jsonl", set(scenarios))
    return Suite(
        path=root,
        name=str(meta.get("name", root.name)),
        description=str(meta.get("description", "")),
        scenarios=scenarios,
        max_turns=max_turns,
        tasks=tasks,
        make_environment=make,
    )


def _read_toml(path: Path) -> dict[str, object]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigurationError(f"cannot read suite file {str(path)!r}: {exc}") from exc


def _import_tools(path: Path) -> ModuleType:
    name = f"safeexec_suite_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None or not path.is_file():
        raise ConfigurationError(f"suite tools file {str(path)!r} is missing")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and typing resolve names through sys.modules
    spec.loader.exec_module(module)
    return module


def _read_tasks(path: Path, scenarios: set[str]) -> tuple[Task, ...]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigurationError(f"cannot read suite file {str(path)!r}: {exc}") from exc
    tasks: list[Task] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(line)
            task = _task(data)
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigurationError(f"{where}: not a task: {exc}") from exc
        if scenarios and task.scenario not in scenarios:
            raise ConfigurationError(
                f"{where}: scenario={task.scenario!r} is not among suite.toml's {sorted(scenarios)}"
            )
        if any(t.id == task.id for t in tasks):
            raise ConfigurationError(f"{where}: duplicate task id={task.id!r}")
        tasks.append(task)
    if not tasks:
        raise ConfigurationError(f"{path} holds no tasks")
    return tuple(tasks)


def _task(data: dict[str, JSONValue]) -> Task:
    check = data["check"]
    if not isinstance(check, dict) or check.get("kind") not in CHECK_KINDS:
        raise ValueError(f"check={check!r} must be an object with kind in {CHECK_KINDS}")
    tools = data["tools"]
    if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
        raise ValueError(f"tools={tools!r} must be a list of tool names")
    max_turns = data.get("max_turns")
    if max_turns is not None and (type(max_turns) is not int or max_turns < 1):
        raise ValueError(f"max_turns={max_turns!r} must be an integer >= 1")
    effects = data.get("authorized_effects") or []
    injections = data.get("injections") or []
    assert isinstance(effects, list) and isinstance(injections, list)
    return Task(
        id=str(data["id"]),
        scenario=str(data["scenario"]),
        instruction=str(data["instruction"]),
        tools=tuple(str(t) for t in tools),
        answer=data["answer"],
        check=check,
        reference=str(data["reference"]),
        reference_dsl=None if data.get("reference_dsl") is None else str(data["reference_dsl"]),
        max_turns=max_turns,
        authorized_effects=tuple(_effect(e) for e in effects),
        injections=tuple(_injection(i) for i in injections),
        tags=tuple(str(t) for t in data.get("tags") or []),  # type: ignore[union-attr]
        extra={k: v for k, v in data.items() if k not in _KNOWN},
    )


def _effect(data: JSONValue) -> AuthorizedEffect:
    if not isinstance(data, dict) or not isinstance(data.get("args", {}), dict):
        raise ValueError(f"authorized effect {data!r} must be {{'tool': ..., 'args': {{...}}}}")
    args = data.get("args") or {}
    assert isinstance(args, dict)
    return AuthorizedEffect(tool=str(data["tool"]), args=args)


def _injection(data: JSONValue) -> Injection:
    if not isinstance(data, dict):
        raise ValueError(f"injection {data!r} must be {{'tool', 'field', 'text'}}")
    return Injection(tool=str(data["tool"]), field=str(data["field"]), text=str(data["text"]))


def answer_checks(task: Task, value: JSONValue) -> bool:
    """Whether a submitted ``value`` checks against the task's ``answer`` under its ``check``."""
    kind = task.check.get("kind")
    expected = task.answer
    if kind == "exact":
        return _same(value, expected) or (
            isinstance(value, str) and value.strip() == str(expected).strip()
        )
    if kind == "number":
        tolerance = task.check.get("tolerance") or 0
        try:
            got, want = float(value), float(expected)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return False
        return math.isfinite(got) and abs(got - want) <= float(tolerance)  # type: ignore[arg-type]
    if kind == "set":
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",")]
        if not isinstance(value, list) or not isinstance(expected, list):
            return False
        return {json.dumps(v, sort_keys=True) for v in value} == {
            json.dumps(v, sort_keys=True) for v in expected
        }
    if kind == "contains":
        return isinstance(value, str) and str(expected).lower() in value.lower()
    if kind == "json":
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                return False
        return _same(value, expected)
    return False
