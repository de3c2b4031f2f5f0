"""``Cell``: the narrow value a view receives instead of the executor, and the seam through
which the executor takes its views (``ViewSet``).

A view may use the cell's guards, its operation budget, where its output goes, the threads it
started and the one file mediator — nothing else of the executor. The executor keeps the fields
current (a budget per run, guards per reset, the sink ``set_sink`` names), so a view reads them
when it acts, never when it is built.

The core never imports the views: the confined worker hands the executor a ``ViewSet`` factory
(``safeexec.restricted.views.WorkerViews``); without one (the host process) the runtime is the
core and the pure stdlib modules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

from safeexec.restricted.guards import GuardError, RuntimeClass

if TYPE_CHECKING:
    from safeexec.restricted.budget import OperationBudget
    from safeexec.restricted.cell_threads import CellThreads
    from safeexec.restricted.guards import Guards, TextSink
    from safeexec.restricted.workdir_files import WorkdirOps

__all__ = ["Cell", "ViewSet", "ViewsFactory"]


class Cell(metaclass=RuntimeClass):
    """What a view may use of the executor running it (see the module docstring).

    ``files`` is the one file mediator (``None`` without a workdir): every file effect of every
    view goes through it. ``counting`` says the executor compiles budget ticks in (in-process).
    """

    __slots__ = ("budget", "counting", "files", "guards", "sink", "threads")

    budget: OperationBudget
    counting: bool
    files: WorkdirOps | None
    guards: Guards
    sink: TextSink
    threads: CellThreads

    def __init__(
        self,
        *,
        guards: Guards,
        budget: OperationBudget,
        sink: TextSink,
        files: WorkdirOps | None,
        counting: bool,
    ) -> None:
        self.guards = guards
        self.budget = budget
        self.sink = sink
        self.files = files
        self.counting = counting

    def __reduce__(self) -> str | tuple[object, ...]:
        raise GuardError("runtime objects cannot be pickled or copied in restricted mode")


class ViewSet(Protocol):
    """The module views one executor may hand out, made for its cell."""

    def attributes(self, name: str) -> Mapping[str, object]:
        """The attributes of the view of ``name`` before the executor filters them; raises
        ``ImportError`` when this executor cannot have it (no workdir)."""
        ...

    def mediate(self, obj: object, name: str) -> object:
        """What reading the mediated attribute ``name`` of ``obj`` gives the code."""
        ...

    def is_internal(self, name: str) -> bool:
        """Is ``name`` a private module a viewed library's C code imports lazily?"""
        ...


ViewsFactory = Callable[[Cell], ViewSet]
