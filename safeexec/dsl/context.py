"""What the ops and tool calls see of the checker: one small protocol, and the values it trades.

:mod:`safeexec.dsl.ops` and :mod:`safeexec.dsl.tool_calls` type a call against a
:class:`CheckerContext` (report a finding, check a sub-expression, measure a piece's cost, bind a
name, record a call site) instead of the checker's private class, so each can be read, and tested,
without it. A leaf module: it imports no other part of the checker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from safeexec.dsl import nodes as n
from safeexec.dsl.cost import Cost
from safeexec.dsl.limits import DslLimits
from safeexec.dsl.rules import DslRule
from safeexec.dsl.signatures import ToolSignature
from safeexec.dsl.valuetypes import DType
from safeexec.model.codec import JSONValue
from safeexec.model.values import Span

__all__ = ["Binding", "CallSite", "CheckerContext", "Scope"]

_T = TypeVar("_T")


@dataclass(slots=True)
class Binding:
    """A name's type where it is bound; loop variables and lambda parameters are ``fixed``
    (they cannot be rebound)."""

    type: DType
    fixed: bool


Scope = dict[str, Binding]


@dataclass(frozen=True, slots=True, kw_only=True)
class CallSite:
    """One tool call in the source: how often it may run and its constant arguments."""

    tool: str
    span: Span
    times: int
    arguments: tuple[tuple[str, JSONValue], ...]
    computed: tuple[str, ...]


class CheckerContext(Protocol):
    """The checker as an op or a tool call sees it while checking one call."""

    limits: DslLimits
    cost: Cost  # the cost of the piece being checked: an op adds its own
    bounds: dict[int, int]  # id(op Call node) -> its iteration bound, for the compiler

    @property
    def multiplier(self) -> int:
        """How many times the code being checked may run (the product of enclosing loops)."""
        ...

    def report(self, rule: DslRule, message: str, span: Span | None) -> None:
        """Add a finding of ``rule`` at ``span``."""
        ...

    def unknown(self, what: str, name: str, choices: Iterable[str], span: Span) -> None:
        """Report an unknown ``name`` with a did-you-mean from ``choices``."""
        ...

    def expr(self, e: n.Expr | n.Lambda, env: Scope) -> DType:
        """Check ``e`` in ``env``; its type (its cost is added to ``cost``)."""
        ...

    def measure(self, check: Callable[[], _T]) -> tuple[_T, Cost]:
        """What ``check`` returns and the cost of what it checked, kept out of ``cost``."""
        ...

    def bindable(self, name: str, span: Span, env: Scope) -> bool:
        """Whether ``name`` may be bound here (reports why not)."""
        ...

    def iteration(self, t: DType, span: Span) -> tuple[DType, int]:
        """The item type and iteration bound of looping over a value of type ``t``."""
        ...

    def tool_result(self, tool: ToolSignature) -> DType:
        """A granted tool's result type under the session's caps."""
        ...

    def add_site(self, site: CallSite) -> None:
        """Record a tool call site for the plan."""
        ...
