"""The fault plan: tools that fail the way real services do, and generic error feedback.

A fault wraps one tool of a task (the first one its reference calls) in a fresh environment:

- ``transient``: the first call raises ``ConnectionError`` (a 503); retrying works.
- ``value_error``: the first string argument's value was renamed; a call with the old value
  raises an informative ``ValueError`` naming the new one, and the new value works.
- ``drift``: the tool's results rename every field the reference reads (``price`` ->
  ``price_v2``), for good (schema drift).
- ``slow``: the first call waits past its budget, then raises ``TimeoutError``.
- ``huge``: the first call's result carries an extra 2 MB field.

A fault that finds nothing to act on (no string argument, no field the reference reads, a
scalar result) is recorded as not applied, and its run is left out of recovery rates.
:class:`GenericFeedback` wraps a model so it sees every failed observation only as "the action
failed": the same runs with and without it measure how much recovery comes from rich feedback.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import time
from collections.abc import Callable, Mapping, Sequence

from safeexec.capabilities.gateway import ToolSpec
from safeexec.harness import Message, Model, Reply, Suite, TurnKey
from safeexec.harness.agents import failed
from safeexec.harness.suite import Environment
from safeexec.model.codec import JSONValue

__all__ = [
    "FAULTS",
    "FaultTarget",
    "FaultyEnvironment",
    "GenericFeedback",
    "fault_target",
    "faulty_suite",
]

FAULTS = ("transient", "value_error", "drift", "slow", "huge")
SLOW_BUDGET_S = 0.2
HUGE_BYTES = 2_000_000
RENAMED_SUFFIX = "_v2"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class FaultTarget:
    """Where a fault strikes: the tool, and what the reference passes and reads."""

    tool: str
    first_arguments: dict[str, JSONValue]
    read_fields: frozenset[str]


class FaultyEnvironment:
    """An environment whose target tool is wrapped by one fault; ``applied`` says if it fired."""

    def __init__(self, inner: Environment, fault: str, target: FaultTarget) -> None:
        self._inner = inner
        self.fault = fault
        self.applied = False
        self.secrets: Sequence[str] = getattr(inner, "secrets", ())
        self.tools = [self._wrap(s) if s.name == target.tool else s for s in inner.tools]
        self._target = target
        self._calls = 0
        strings = [(k, v) for k, v in target.first_arguments.items() if isinstance(v, str)]
        self._renamed = strings[0] if strings else None

    def snapshot(self) -> JSONValue:
        return self._inner.snapshot()

    def _wrap(self, spec: ToolSpec) -> ToolSpec:
        function = spec.function

        @functools.wraps(function)
        def faulty(**kwargs: object) -> object:
            self._calls += 1
            return self._call(spec.name, function, kwargs, first=self._calls == 1)

        return dataclasses.replace(spec, function=faulty)

    def _call(
        self, name: str, function: Callable[..., object], kwargs: dict[str, object], *, first: bool
    ) -> object:
        if self.fault == "transient" and first:
            self.applied = True
            raise ConnectionError(f"{name}: service temporarily unavailable (503); retry the call")
        if self.fault == "slow" and first:
            self.applied = True
            time.sleep(SLOW_BUDGET_S)
            raise TimeoutError(f"{name}: no answer within its {SLOW_BUDGET_S} s budget; retry")
        if self.fault == "value_error" and self._renamed is not None:
            param, old = self._renamed
            new = f"{old}{RENAMED_SUFFIX}"
            if kwargs.get(param) == old:
                self.applied = True
                raise ValueError(
                    f"{name}: {param}={old!r} was renamed; call it with {param}={new!r}"
                )
            if kwargs.get(param) == new:
                kwargs = {**kwargs, param: old}
        result = function(**kwargs)
        if self.fault == "drift":
            return self._drift(result)
        if self.fault == "huge" and first:
            return self._huge(result)
        return result

    def _drift(self, result: object) -> object:
        if isinstance(result, list):
            return [self._drift(item) for item in result]
        if isinstance(result, dict):
            fields = self._target.read_fields
            if fields & set(result):
                self.applied = True
            return {(f"{k}{RENAMED_SUFFIX}" if k in fields else k): v for k, v in result.items()}
        return result

    def _huge(self, result: object) -> object:
        padding = "x" * HUGE_BYTES
        if isinstance(result, dict):
            self.applied = True
            return {**result, "debug": padding}
        if isinstance(result, list) and result and isinstance(result[0], dict):
            self.applied = True
            return [{**result[0], "debug": padding}, *result[1:]]
        return result


_SUBSCRIPT = re.compile(r"""\[["']([A-Za-z_][A-Za-z0-9_]*)["']\]""")


def fault_target(reference: str, calls: Sequence[tuple[str, dict[str, JSONValue]]]) -> FaultTarget:
    """The first tool the reference calls, its first arguments, and the fields it subscripts."""
    tool, arguments = calls[0]
    return FaultTarget(
        tool=tool,
        first_arguments=dict(arguments),
        read_fields=frozenset(_SUBSCRIPT.findall(reference)),
    )


def faulty_suite(
    suite: Suite, fault: str, target: FaultTarget
) -> tuple[Suite, list[FaultyEnvironment]]:
    """``suite`` whose environments carry ``fault`` at ``target``, and the list of environments
    it makes (so the caller can read whether the fault fired)."""
    made: list[FaultyEnvironment] = []

    def make_environment(seed: int) -> FaultyEnvironment:
        env = FaultyEnvironment(suite.make_environment(seed), fault, target)
        made.append(env)
        return env

    return dataclasses.replace(suite, make_environment=make_environment), made


GENERIC = "[error] the action failed."


class GenericFeedback:
    """A model that sees every failed observation as :data:`GENERIC` only."""

    def __init__(self, inner: Model) -> None:
        self._inner = inner
        self.name = inner.name
        self.params = inner.params

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, JSONValue]] = (),
        key: TurnKey,
        max_tokens: int | None = None,
    ) -> Reply:
        shown = [self._generic(m) for m in messages]
        return self._inner.complete(shown, tools=tools, key=key, max_tokens=max_tokens)

    @staticmethod
    def _generic(message: Message) -> Message:
        if message.role not in ("user", "tool") or not failed(message.content):
            return message
        prefix = "Observation:\n" if message.content.startswith("Observation:\n") else ""
        return dataclasses.replace(message, content=prefix + GENERIC)
