"""The restricted runtime's views: hand-built stand-ins for stdlib modules (files, threads,
asyncio, sqlite3, archives, compression, logging, warnings, ``sys``/``os``) and the data stack.

Each view is made for one cell from what the runtime hands it; the core never imports this
package.
"""

from __future__ import annotations

from collections.abc import Mapping

from safeexec.restricted.allowlist import BUILT_VIEWS, DATA_VIEWS
from safeexec.restricted.cell import Cell
from safeexec.restricted.guards import RuntimeClass
from safeexec.restricted.views import (
    archive_views,
    asyncio_view,
    concurrency_views,
    data_views,
    environment_views,
    logging_view,
    sqlite_views,
    warnings_view,
    workdir_views,
)

__all__ = ["WorkerViews"]


class WorkerViews(metaclass=RuntimeClass):
    """The confined worker's views for one cell (a ``ViewSet``): the built stand-ins, made
    together on first use, and the data stack's views, made per module."""

    def __init__(self, cell: Cell) -> None:
        self._cell = cell
        self._built: dict[str, dict[str, object]] | None = None

    def attributes(self, name: str) -> Mapping[str, object]:
        if name in DATA_VIEWS:
            return data_views.data_attributes(self._cell, name)
        if name not in BUILT_VIEWS:
            raise ImportError(f"restricted mode has no view of {name!r}")
        source = self._built_views().get(name)
        if source is None:
            raise ImportError(f"{name!r} needs a working directory in restricted mode")
        return source

    def mediate(self, obj: object, name: str) -> object:
        return data_views.mediate(self._cell, obj, name)

    def is_internal(self, name: str) -> bool:
        return data_views.is_internal_module(name)

    def _built_views(self) -> dict[str, dict[str, object]]:
        if self._built is None:
            cell = self._cell
            built = dict(environment_views.environment_views(cell))
            built.update(concurrency_views.concurrency_views(cell))
            built.update(warnings_view.warnings_view(cell))
            built.update(logging_view.logging_view(cell))
            built["asyncio"] = asyncio_view.asyncio_view(cell)
            if cell.files is not None:
                built.update(workdir_views.workdir_views(cell, cell.files))
                for extra in (
                    sqlite_views.sqlite_views(cell, cell.files),
                    archive_views.archive_views(cell, cell.files),
                ):
                    for module, attributes in extra.items():
                        built.setdefault(module, {}).update(attributes)
            self._built = built
        return self._built
