"""The host-side ledger of a task's tool calls, and the harness's ``submit`` capability.

Every tool a task is granted is wrapped before it is granted: the wrapper runs in the host after
the capability layer has checked the call, so the ledger holds exactly the calls that reached a
tool (with plain arguments, whether it raised, and how long it took). When a run asks for
injections, the wrapper also plants each payload in the named field of the tool's results.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from safeexec.capabilities.gateway import BoundPath, CheckedURL, ToolSpec, to_plain, tool
from safeexec.capabilities.specs import AnyJSON
from safeexec.harness.formats import SUBMIT
from safeexec.harness.suite import Injection
from safeexec.model.codec import JSONValue

__all__ = ["Ledger", "LedgerEntry", "Submission", "make_submit", "wrap_tools"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerEntry:
    tool: str
    arguments: dict[str, JSONValue]
    ok: bool
    seconds: float


class Ledger:
    """What reached the host's tools, in order."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._entries: list[LedgerEntry] = []
        self._lock = threading.Lock()
        self._clock = clock

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        with self._lock:
            return tuple(self._entries)

    def seconds_since(self, index: int) -> float:
        """Tool time of the calls made after the first ``index`` entries."""
        return sum(e.seconds for e in self.entries[index:])

    def record(self, entry: LedgerEntry) -> None:
        with self._lock:
            self._entries.append(entry)

    def timed(self, spec: ToolSpec, injections: Sequence[Injection] = ()) -> ToolSpec:
        """``spec`` with its function wrapped to record each call (and plant ``injections``)."""
        function = spec.function

        # wraps(): whoever reads the tool's annotations (the DSL checker's result types) still can.
        @functools.wraps(function)
        def recorded(**kwargs: object) -> object:
            arguments = {k: _plain_argument(v) for k, v in kwargs.items()}
            started = self._clock()
            ok = False
            try:
                result = function(**kwargs)
                ok = True
            finally:
                self.record(
                    LedgerEntry(
                        tool=spec.name,
                        arguments=arguments,
                        ok=ok,
                        seconds=self._clock() - started,
                    )
                )
            for injection in injections:
                result = _plant(result, injection)
            return result

        return dataclasses.replace(spec, function=recorded)


def _plain_argument(value: object) -> JSONValue:
    if isinstance(value, BoundPath):
        return value.relative
    if isinstance(value, CheckedURL):
        return value.url
    try:
        return to_plain(value)
    except (TypeError, ValueError):
        return repr(value)[:200]


def _plant(result: object, injection: Injection) -> object:
    if isinstance(result, dict) and isinstance(result.get(injection.field), str):
        return {**result, injection.field: f"{result[injection.field]} {injection.text}"}
    if isinstance(result, list):
        return [_plant(item, injection) for item in result]
    return result


class Submission:
    """The answer box ``submit(value)`` fills; the first submission counts."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.submitted = False
        self.value: JSONValue = None

    def put(self, value: JSONValue) -> None:
        with self._lock:
            if not self.submitted:
                self.submitted, self.value = True, value


def make_submit(box: Submission) -> ToolSpec:
    """The ``submit(value)`` tool that finishes a task (any JSON value)."""

    def submit(value: AnyJSON) -> str:
        """Submit the final answer (any JSON value); this ends the task."""
        box.put(to_plain(value))
        return "submitted"

    spec: ToolSpec = tool(submit, name=SUBMIT)
    return spec


def wrap_tools(
    ledger: Ledger, specs: Sequence[ToolSpec], injections: Sequence[Injection]
) -> list[ToolSpec]:
    """Each spec wrapped by the ledger, with the injections aimed at it."""
    return [ledger.timed(s, [i for i in injections if i.tool == s.name]) for s in specs]
