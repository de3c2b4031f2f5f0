"""How a compiled DSL program runs: the cell the host sends, and the worker's DSL executor.

The host parses, checks, plans and compiles a program (``safeexec.dsl``); what crosses to the
confined worker is one :class:`DslCell`: the program's text (for tracebacks), its code object
(``marshal``: host to worker only, made by the host's compiler, never read back) and the bounds
the runtime enforces. :class:`DslExecutor` is the worker's executor for the ``dsl`` mode; the
in-process variant calls :func:`run_program` itself. Either way the code runs with no builtins
and names only the run's ``dsl_*`` helpers and metered tool proxies.
"""

from __future__ import annotations

import base64
import json
import linecache
import marshal
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from safeexec.sandbox.dsl_runtime import DslRuntime, TextSink

__all__ = ["DslBounds", "DslCell", "DslExecutor", "new_runtime", "run_program"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DslBounds:
    """What the runtime holds one run to: the plan's iterations and calls per tool, and the
    session's caps on items and text."""

    iterations: int
    calls: Mapping[str, int] = field(default_factory=dict)
    max_items: int
    max_text_chars: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DslCell:
    """One checked, compiled program as the host sends it to the worker (``Run.code``)."""

    source: str
    module: bytes  # marshal.dumps of the code object the host compiled
    bounds: DslBounds

    def to_text(self) -> str:
        """The cell as the text of a ``run`` frame."""
        bounds = self.bounds
        return json.dumps(
            {
                "source": self.source,
                "module": base64.b64encode(self.module).decode("ascii"),
                "iterations": bounds.iterations,
                "calls": dict(bounds.calls),
                "max_items": bounds.max_items,
                "max_text_chars": bounds.max_text_chars,
            }
        )

    @classmethod
    def from_text(cls, text: str) -> DslCell:
        """Read a cell made by :meth:`to_text`; ``ValueError`` for anything else."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("a DSL cell is a JSON object")
        source, module, calls = data.get("source"), data.get("module"), data.get("calls")
        numbers = [data.get(k) for k in ("iterations", "max_items", "max_text_chars")]
        if (
            not isinstance(source, str)
            or not isinstance(module, str)
            or not isinstance(calls, dict)
            or not all(type(v) is int for v in (*numbers, *calls.values()))
        ):
            raise ValueError("a DSL cell needs source, module, calls and int bounds")
        iterations, max_items, max_text_chars = numbers
        return cls(
            source=source,
            module=base64.b64decode(module, validate=True),
            bounds=DslBounds(
                iterations=iterations,  # type: ignore[arg-type]
                calls={str(k): v for k, v in calls.items()},
                max_items=max_items,  # type: ignore[arg-type]
                max_text_chars=max_text_chars,  # type: ignore[arg-type]
            ),
        )


def new_runtime(
    bounds: DslBounds, *, sink: TextSink, operations: Iterator[int] | None = None
) -> DslRuntime:
    """A fresh runtime for one run under ``bounds``; ``operations``: the run's operation
    budget's counter, where one stops the run (in-process)."""
    return DslRuntime(
        max_iterations=bounds.iterations,
        call_bounds=bounds.calls,
        max_items=bounds.max_items,
        max_text_chars=bounds.max_text_chars,
        sink=sink,
        operations=operations,
    )


def run_program(
    code: types.CodeType,
    *,
    filename: str,
    runtime: DslRuntime,
    tools: Mapping[str, Callable[..., object]],
) -> None:
    """Run one compiled program with ``runtime``'s helpers and ``tools`` (metered by it);
    exceptions the program raised propagate."""
    # No builtins and no RestrictedPython pass: the compiler's shapes were verified, and the
    # code names only the run's helpers and tools (dsl/SPEC.md, "Where a DSL program runs").
    namespace: dict[str, object] = {"__builtins__": {}, "__name__": "__dsl__"}
    namespace.update(runtime.namespace(tools))
    exec(named(code, filename), namespace)


def named(code: types.CodeType, filename: str) -> types.CodeType:
    """``code`` as if compiled from ``filename``, lambdas too, so tracebacks point into this
    run's cell."""
    consts = tuple(
        named(c, filename) if isinstance(c, types.CodeType) else c for c in code.co_consts
    )
    return code.replace(co_filename=filename, co_consts=consts)


class DslExecutor:
    """The worker's executor in the ``dsl`` mode: each cell is a :class:`DslCell`; nothing
    carries between cells (a program is whole)."""

    def __init__(self) -> None:
        self._tools: dict[str, Callable[..., object]] = {}

    def bind_tools(self, tools: Mapping[str, Callable[..., object]]) -> None:
        self._tools = dict(tools)

    def reset(self) -> None:
        """Nothing to forget: each program runs in a namespace of its own."""

    def execute(self, code: str, *, filename: str) -> str | None:
        cell = DslCell.from_text(code)
        # Tracebacks show the DSL program's lines (the compiled code carries them).
        lines = cell.source.splitlines(True)
        linecache.cache[filename] = (len(cell.source), None, lines, filename)
        compiled = marshal.loads(cell.module)
        if not isinstance(compiled, types.CodeType):
            raise ValueError("a DSL cell's module is a code object")
        runtime = new_runtime(cell.bounds, sink=sys.stdout)
        run_program(compiled, filename=filename, runtime=runtime, tools=self._tools)
        return runtime.shown_result()
