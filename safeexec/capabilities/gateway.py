"""Tools and capabilities: the only way sandboxed code causes an effect in the world.

A host function becomes a tool with :func:`tool`, which derives a :class:`ToolSpec` (name,
description, JSON Schema of the parameters from the type hints, declared effects). A session
grants tools as :class:`Capability` tokens held in a :class:`CapabilitySet`, the host-side
:class:`~safeexec.backends.base.ToolGateway`: tokens have no public constructor, can only be
narrowed (:meth:`Capability.attenuate`), and refuse copying and pickling.

Every call from a sandbox arrives as ``(tool name, JSON arguments)`` and is treated like a request
to an adversarial API: arguments are validated against the schema with exact types and rebuilt as
fresh values, unknown parameters are refused, paths resolve beneath the tool's root into a
:class:`BoundPath` (opened through a descriptor, never re-resolved), network tools get a
:class:`CheckedURL` pinned to the address that was checked (never private, loopback or link-local),
then scope, call limits, the step's tool budget (charged per call) and approval are checked. The
tool runs in the host; the reply carries a JSON-plain copy of the result (or a short error message)
and a ``ToolCalled``/``ToolRefused`` event for the audit log, at most ``MAX_TOOL_EVENTS`` a step.

Inside a sandbox, :func:`tool_function` turns a :class:`ToolDescriptor` and a transport into the
plain function the code calls.
"""

from __future__ import annotations

import functools
import os
import secrets
import threading
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from safeexec.capabilities.specs import (
    Effect,
    ToolDescriptor,
    ToolSpec,
    Url,
    _bind,
    _Refusal,
    _validate,
    canonical_json,
    to_plain,
    tool,
)
from safeexec.capabilities.targets import (
    BoundPath,
    CheckedURL,
    Resolver,
    TargetRefused,
    is_forbidden_address,
)
from safeexec.errors import CapabilityError, ToolError
from safeexec.model.codec import JSONValue
from safeexec.model.fieldwise import Fieldwise
from safeexec.model.values import ExecutionEvent, LimitHit, ToolCalled, ToolRefused, sha256_hex

__all__ = [
    "MAX_TOOL_EVENTS",
    "ApprovalRequest",
    "BoundPath",
    "Capability",
    "CapabilitySet",
    "CapabilityStatistics",
    "CheckedURL",
    "Effect",
    "ToolDescriptor",
    "ToolError",
    "ToolReply",
    "ToolSpec",
    "Url",
    "canonical_json",
    "is_forbidden_address",
    "to_plain",
    "tool",
    "tool_function",
]

_MAX_ERROR_CHARS = 500
MAX_TOOL_EVENTS = 256
"""``ToolCalled``/``ToolRefused`` events one step records; past it one ``LimitHit`` of
``tool_events`` stands for the rest (they are still counted), so a step's audit line is bounded."""


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ToolReply(Fieldwise):
    """The host's answer to one tool call: a plain-data value, or an error message for the code."""

    ok: bool
    value: JSONValue = None
    error: str = ""
    event: ExecutionEvent | None = None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ApprovalRequest(Fieldwise):
    """What the harness's approval callback is asked about."""

    tool: str
    capability_id: str
    arguments: JSONValue
    effects: tuple[Effect, ...]


# -- capabilities ----------------------------------------------------------------------------------


class _NoPublicConstructor(type):
    """Metaclass: ``Capability(...)`` raises; only :class:`CapabilitySet` can mint tokens."""

    def __call__(cls, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError(
            f"{cls.__module__}.{cls.__qualname__} has no public constructor; "
            "use CapabilitySet.grant() or Capability.attenuate()"
        )

    def _create(cls, *args: object, **kwargs: object) -> typing.Any:
        return super().__call__(*args, **kwargs)


class Capability(metaclass=_NoPublicConstructor):
    """An unforgeable grant of one tool: scope, call limit and approval step. Narrow only."""

    __slots__ = (
        "_calls",
        "_lock",
        "_parent",
        "id",
        "max_calls",
        "requires_approval",
        "scope",
        "spec",
    )

    id: str
    spec: ToolSpec
    max_calls: int | None
    scope: frozenset[str] | None
    requires_approval: bool
    _parent: Capability | None
    _calls: int
    _lock: threading.Lock

    def __init__(
        self,
        *,
        spec: ToolSpec,
        max_calls: int | None,
        scope: frozenset[str] | None,
        requires_approval: bool,
        parent: Capability | None,
    ) -> None:
        setter = object.__setattr__
        setter(self, "id", f"cap-{secrets.token_hex(8)}")
        setter(self, "spec", spec)
        setter(self, "max_calls", max_calls)
        setter(self, "scope", scope)
        setter(self, "requires_approval", requires_approval)
        setter(self, "_parent", parent)
        setter(self, "_calls", 0)
        setter(self, "_lock", threading.Lock())

    @property
    def tool(self) -> str:
        return self.spec.name

    @property
    def calls_made(self) -> int:
        return self._calls

    @property
    def remaining_calls(self) -> int | None:
        """Calls left on this token and every token it was narrowed from (``None``: no limit)."""
        left: int | None = None
        node: Capability | None = self
        while node is not None:
            if node.max_calls is not None:
                mine = node.max_calls - node._calls
                left = mine if left is None else min(left, mine)
            node = node._parent
        return left

    def attenuate(
        self,
        *,
        max_calls: int | None = None,
        scope: Iterable[str] | None = None,
        requires_approval: bool = False,
    ) -> Capability:
        """A narrower token: at most ``max_calls`` more calls, a sub-scope, or an added approval
        step. Its calls also count against this token. Widening raises ``CapabilityError``."""
        remaining = self.remaining_calls
        if max_calls is not None and max_calls < 0:
            raise CapabilityError(f"max_calls={max_calls!r} must be >= 0")
        if max_calls is not None and remaining is not None and max_calls > remaining:
            raise CapabilityError(
                f"max_calls={max_calls!r} exceeds the {remaining} calls left on {self.tool!r}; "
                "attenuate can only narrow"
            )
        new_scope = _scope_set(self.spec, scope)
        if new_scope is None:
            new_scope = self.scope
        elif self.scope is not None and not _scope_within(self.spec, new_scope, self.scope):
            raise CapabilityError(
                f"scope={sorted(new_scope)!r} is not within {sorted(self.scope)!r}; "
                "attenuate can only narrow"
            )
        return type(self)._create(
            spec=self.spec,
            max_calls=max_calls,
            scope=new_scope,
            requires_approval=self.requires_approval or requires_approval,
            parent=self,
        )

    def _charge(self) -> bool:
        """Take one call from this token and its ancestors; False if any is used up."""
        chain: list[Capability] = []
        node: Capability | None = self
        while node is not None:
            chain.append(node)
            node = node._parent
        for cap in chain:
            cap._lock.acquire()
        try:
            if any(c.max_calls is not None and c._calls >= c.max_calls for c in chain):
                return False
            for cap in chain:
                object.__setattr__(cap, "_calls", cap._calls + 1)
        finally:
            for cap in chain:
                cap._lock.release()
        return True

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("capabilities are immutable; use attenuate()")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError("capabilities are immutable")

    def __reduce_ex__(self, protocol: typing.SupportsIndex) -> NoReturn:
        raise TypeError("capabilities cannot be pickled or copied")

    def __copy__(self) -> NoReturn:
        raise TypeError("capabilities cannot be copied; use attenuate()")

    def __deepcopy__(self, memo: object) -> NoReturn:
        raise TypeError("capabilities cannot be copied; use attenuate()")

    def __repr__(self) -> str:
        scope = None if self.scope is None else sorted(self.scope)
        return (
            f"<Capability {self.id} tool={self.tool!r} remaining={self.remaining_calls} "
            f"scope={scope!r} approval={self.requires_approval}>"
        )


def _scope_set(spec: ToolSpec, scope: Iterable[str] | None) -> frozenset[str] | None:
    if scope is None:
        return None
    if isinstance(scope, str):
        raise CapabilityError(f"scope={scope!r} must be a collection of strings, not a string")
    values = frozenset(scope)
    if not all(type(v) is str for v in values):
        raise CapabilityError(f"scope={sorted(map(repr, values))} must contain strings only")
    if spec.scope_parameter is None:
        raise CapabilityError(
            f"tool {spec.name!r} has no scope parameter; pass scope_parameter= to @tool"
        )
    return values


def _scope_within(spec: ToolSpec, inner: frozenset[str], outer: frozenset[str]) -> bool:
    if _parameter_format(spec, spec.scope_parameter) == "path":
        return all(any(_path_within(i, o) for o in outer) for i in inner)
    return inner <= outer


def _path_within(inner: str, outer: str) -> bool:
    inner_path, outer_path = Path(os.path.normpath(inner)), Path(os.path.normpath(outer))
    return inner_path == outer_path or outer_path in inner_path.parents or str(outer_path) == "."


@functools.lru_cache(maxsize=4096)
def _parameter_format(spec: ToolSpec, name: str | None) -> str | None:
    properties = spec.parameters.get("properties")
    if name is None or not isinstance(properties, dict):
        return None
    schema = properties.get(name)
    if isinstance(schema, dict) and "anyOf" in schema:
        first = schema["anyOf"]
        schema = first[0] if isinstance(first, list) else None
    if isinstance(schema, dict):
        fmt = schema.get("format")
        return fmt if isinstance(fmt, str) else None
    return None


_BUDGET_SPENT = "the session's tool-call budget is spent"


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class CapabilityStatistics(Fieldwise):
    """Counters of one :class:`CapabilitySet` (a frozen snapshot: later calls leave it be)."""

    calls: int
    refusals: int
    granted: int


class CapabilitySet:
    """The capabilities of one session, and the gateway tool calls from its sandbox go through.

    ``approve`` is the harness's approval callback; without one, calls that need approval are
    refused. ``invoke`` never raises for anything the sandboxed code did.
    """

    def __init__(
        self,
        *,
        approve: Callable[[ApprovalRequest], bool] | None = None,
        resolve: Resolver | None = None,
    ) -> None:
        self._approve = approve
        self._step_approved: Callable[[ApprovalRequest], bool] | None = None
        self._resolve = resolve
        self._by_name: dict[str, Capability] = {}
        self._lock = threading.Lock()
        self._calls = 0
        self._refusals = 0
        self._budget_left: int | None = None
        self._step_events = 0

    def begin_step(
        self,
        *,
        tool_calls_left: int | None = None,
        approved: Callable[[ApprovalRequest], bool] | None = None,
    ) -> None:
        """Start a step: at most ``tool_calls_left`` calls may run until the next ``begin_step``
        (``None``: only the grants limit them), and the per-step event cap starts again.
        ``approved`` says which of this step's calls are approved already (an approved DSL
        plan's calls); any other call that needs approval asks ``approve`` as before.

        The session calls this before every run, so its tool budget is charged per call, not
        after the step; a call past it is refused like one past ``max_calls``.
        """
        if tool_calls_left is not None and type(tool_calls_left) is not int:
            raise CapabilityError(f"tool_calls_left={tool_calls_left!r} must be an integer")
        with self._lock:
            self._budget_left = None if tool_calls_left is None else max(0, tool_calls_left)
            self._step_events = 0
            self._step_approved = approved

    def grant(
        self,
        spec: ToolSpec | Capability,
        *,
        max_calls: int | None = None,
        scope: Iterable[str] | None = None,
        requires_approval: bool = False,
    ) -> Capability:
        """Mint a token for ``spec`` (or install a narrowing of an existing token) and hold it.

        Granting a name again replaces the earlier grant.
        """
        if isinstance(spec, Capability):
            capability = spec.attenuate(
                max_calls=max_calls, scope=scope, requires_approval=requires_approval
            )
        elif isinstance(spec, ToolSpec):
            if max_calls is not None and (type(max_calls) is not int or max_calls < 0):
                raise CapabilityError(f"max_calls={max_calls!r} must be an integer >= 0")
            capability = Capability._create(
                spec=spec,
                max_calls=max_calls,
                scope=_scope_set(spec, scope),
                requires_approval=requires_approval,
                parent=None,
            )
        else:
            raise CapabilityError(
                f"grant() takes a ToolSpec (made with @tool) or a Capability, got {spec!r}"
            )
        with self._lock:
            self._by_name[capability.tool] = capability
        return capability

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def get(self, name: str) -> Capability | None:
        return self._by_name.get(name)

    def describe(self) -> tuple[ToolDescriptor, ...]:
        return tuple(cap.spec.descriptor() for cap in self._by_name.values())

    def statistics(self) -> CapabilityStatistics:
        """Counters: calls run and calls refused through this set, and the tools granted."""
        return CapabilityStatistics(
            calls=self._calls, refusals=self._refusals, granted=len(self._by_name)
        )

    def invoke(self, name: str, arguments: JSONValue) -> ToolReply:
        """Check and run one call coming out of a sandbox; refusals and failures are replies.

        ``arguments`` is ``{"args": [...], "kwargs": {...}}``, bound to the tool's parameters here.
        """
        capability = self._by_name.get(name) if type(name) is str else None
        if capability is None:
            return self._refuse(str(name)[:100], "", f"tool {str(name)[:100]!r} was not granted")
        try:
            kwargs, plain = self._check_arguments(capability, arguments)
        except _Refusal as exc:
            return self._refuse(name, capability.id, str(exc))
        try:
            return self._run_checked(capability, kwargs, plain)
        finally:
            _close_paths(kwargs)  # a bound path lives for the one call it was checked for

    def _run_checked(
        self, capability: Capability, kwargs: dict[str, object], plain: JSONValue
    ) -> ToolReply:
        name, spec = capability.tool, capability.spec
        remaining = capability.remaining_calls
        if remaining is not None and remaining <= 0:
            return self._refuse(name, capability.id, f"call limit reached for {name!r}")
        if self._budget_left is not None and self._budget_left <= 0:
            # Before the approval prompt: a spent budget asks nobody.
            return self._refuse(name, capability.id, _BUDGET_SPENT)
        if capability.requires_approval and not self._approved(capability, plain):
            return self._refuse(name, capability.id, f"call to {name!r} was not approved")
        if not self._take_budget():
            return self._refuse(name, capability.id, _BUDGET_SPENT)
        if not capability._charge():
            with self._lock:
                if self._budget_left is not None:
                    self._budget_left += 1  # the call does not run: give its budget back
            return self._refuse(name, capability.id, f"call limit reached for {name!r}")
        arguments_sha256 = sha256_hex(canonical_json(plain))
        with self._lock:
            self._calls += 1
        try:
            result = spec.function(**kwargs)
            value = to_plain(result, where="result")
        except Exception as exc:
            message = f"{type(exc).__name__}: {exc}"[:_MAX_ERROR_CHARS]
            event = ToolCalled(
                tool=name,
                capability_id=capability.id,
                arguments_sha256=arguments_sha256,
                result_sha256=sha256_hex(message),
                effects=tuple(e.value for e in spec.effects),
                ok=False,
            )
            return ToolReply(
                ok=False, error=f"tool {name!r} failed: {message}", event=self._recorded(event)
            )
        event = ToolCalled(
            tool=name,
            capability_id=capability.id,
            arguments_sha256=arguments_sha256,
            result_sha256=sha256_hex(canonical_json(value)),
            effects=tuple(e.value for e in spec.effects),
            ok=True,
        )
        return ToolReply(ok=True, value=value, event=self._recorded(event))

    def _take_budget(self) -> bool:
        """Charge one call to the step's tool budget; False if none is left."""
        with self._lock:
            if self._budget_left is not None:
                if self._budget_left <= 0:
                    return False
                self._budget_left -= 1
            return True

    def _recorded(self, event: ExecutionEvent) -> ExecutionEvent | None:
        """The event to record for one reply: the step's first ``MAX_TOOL_EVENTS`` as they are,
        then one ``LimitHit`` standing for the rest, then nothing."""
        with self._lock:
            self._step_events += 1
            count = self._step_events
        if count <= MAX_TOOL_EVENTS:
            return event
        if count == MAX_TOOL_EVENTS + 1:
            return LimitHit(limit="tool_events", value=float(MAX_TOOL_EVENTS))
        return None

    def _refuse(self, name: str, capability_id: str, reason: str) -> ToolReply:
        with self._lock:
            self._refusals += 1
        # Reasons may quote the sandbox's arguments: bounded, so one event stays small.
        reason = reason[:_MAX_ERROR_CHARS]
        event = ToolRefused(tool=name, capability_id=capability_id, reason=reason)
        return ToolReply(ok=False, error=reason, event=self._recorded(event))

    def _approved(self, capability: Capability, plain: JSONValue) -> bool:
        request = ApprovalRequest(
            tool=capability.tool,
            capability_id=capability.id,
            arguments=plain,
            effects=capability.spec.effects,
        )
        try:
            if self._step_approved is not None and self._step_approved(request) is True:
                return True
            if self._approve is None:
                return False
            return self._approve(request) is True
        except Exception:
            return False  # a crashing approver approves nothing

    def _check_arguments(
        self, capability: Capability, arguments: JSONValue
    ) -> tuple[dict[str, object], JSONValue]:
        spec = capability.spec
        properties = spec.parameters["properties"]
        required = spec.parameters["required"]
        assert isinstance(properties, dict) and isinstance(required, list)
        arguments = _bind(spec.name, tuple(properties), arguments)
        unknown = sorted(set(arguments) - set(properties))
        if unknown:
            raise _Refusal(f"{spec.name}: unknown parameter(s) {unknown}")
        missing = [r for r in required if r not in arguments]
        if missing:
            raise _Refusal(f"{spec.name}: missing required parameter(s) {missing}")
        kwargs: dict[str, object] = {}
        plain: dict[str, JSONValue] = {}
        for key, raw in arguments.items():
            schema = properties[key]
            assert isinstance(schema, dict)
            where = f"{spec.name}({key}=...)"
            value = _validate(schema, raw, where)
            plain[key] = typing.cast(JSONValue, value)  # _validate built a fresh plain value
            fmt = _parameter_format(spec, key)
            try:
                if value is not None and fmt == "path":
                    assert spec.root is not None and isinstance(value, str)
                    value = BoundPath._resolve(str(spec.root), value)
                elif value is not None and fmt == "uri":
                    assert isinstance(value, str)
                    if self._resolve is None:
                        value = CheckedURL._check(value)
                    else:
                        value = CheckedURL._check(value, resolve=self._resolve)
            except TargetRefused as exc:
                _close_paths(kwargs)
                raise _Refusal(f"{where}: {exc}") from None
            kwargs[key] = value
        try:
            self._check_scope(capability, kwargs)
        except _Refusal:
            _close_paths(kwargs)
            raise
        return kwargs, plain

    @staticmethod
    def _check_scope(capability: Capability, kwargs: Mapping[str, object]) -> None:
        spec = capability.spec
        if capability.scope is None or spec.scope_parameter is None:
            return
        value = kwargs.get(spec.scope_parameter)
        fmt = _parameter_format(spec, spec.scope_parameter)
        if fmt == "path" and isinstance(value, BoundPath):
            # The bound path is lexically normal and link-free, so its text is where it is.
            if any(_path_within(value.relative, entry) for entry in capability.scope):
                return
        elif fmt == "uri" and isinstance(value, CheckedURL):
            # An entry is a host name, a scheme ("https"), or a URL prefix ("https://api.x/v1/").
            url = value.url
            for entry in capability.scope:
                prefix = "://" in entry and url.startswith(entry.rstrip("/") + "/")
                if entry in (value.host, value.scheme) or prefix or url == entry:
                    return
        elif value is not None and str(value) in capability.scope:
            return
        raise _Refusal(
            f"{spec.name}: {spec.scope_parameter}={value if fmt != 'path' else '...'}"
            f" is outside the granted scope"
        )


def _close_paths(kwargs: Mapping[str, object]) -> None:
    """End the descriptors of a call's bound paths (the tool returned, or never ran)."""
    for value in kwargs.values():
        if isinstance(value, BoundPath):
            value._close()


# -- the sandbox side ---------------------------------------------------------------------------


def tool_function(
    descriptor: ToolDescriptor, invoke: Callable[[str, JSONValue], ToolReply]
) -> Callable[..., JSONValue]:
    """The plain function sandboxed code calls for one tool.

    Arguments travel as ``{"args": [...], "kwargs": {...}}`` (the gateway binds them to parameters
    in schema order); each must be JSON data of exact types (``TypeError`` otherwise) and is copied
    before it leaves. A refusal or tool failure raises :class:`ToolError` with the host's message.
    """
    name = descriptor.name

    def call(*args: object, **kwargs: object) -> JSONValue:
        arguments: JSONValue = {
            "args": to_plain(list(args), where=f"{name}() arguments"),
            "kwargs": to_plain(dict(kwargs), where=f"{name}() arguments"),
        }
        reply = invoke(name, arguments)
        if not reply.ok:
            raise ToolError(reply.error)
        return to_plain(reply.value, where=f"{name}() result")

    call.__name__ = name
    call.__qualname__ = name
    call.__doc__ = descriptor.description
    return call
