"""The backend sessions a :class:`~safeexec.session.session.Session` holds: one per mode, opened
lazily.

A mode's backend comes from the caller's ``backends`` mapping, or (when none was given) from
``make`` on first use: for a ``Session``, the process-wide
:data:`~safeexec.backends.registry.shared_backends`. The pool closes the backend sessions it
opened, never a backend: those belong to the caller or to the shared set. The backend session
opened for a mode is kept, so state carries over between steps like a notebook kernel, until it
is discarded (a failed or unsettled call) and the next step opens a fresh one.

Split out of :mod:`safeexec.session.session`, which decides what each session is opened with.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping

from safeexec.backends.base import Backend, BackendSession, CpuMetered, SessionSpec
from safeexec.errors import BackendUnavailable

__all__ = ["BackendPool"]


class BackendPool:
    """The backends of one session and the backend session kept open per mode (not thread-safe:
    the owning session serialises every call)."""

    def __init__(
        self, backends: Mapping[str, Backend] | None, *, make: Callable[[str], Backend]
    ) -> None:
        self._backends: dict[str, Backend] = dict(backends) if backends is not None else {}
        self._use_default_backends = backends is None
        self._make = make
        self._open: dict[str, BackendSession] = {}
        self._closed_cpu = 0.0  # what sessions closed here used after their last call

    @property
    def open_modes(self) -> tuple[str, ...]:
        """The modes whose backend session is open, sorted."""
        return tuple(sorted(self._open))

    def session(self, mode: str, spec: Callable[[], SessionSpec]) -> BackendSession:
        """The open backend session of ``mode``, opened with ``spec()`` if there is none."""
        if mode in self._open:
            return self._open[mode]
        session = self._backend(mode).open(spec())
        self._open[mode] = session
        return session

    def for_files(self, preferred: str | None) -> BackendSession | None:
        """The open backend session file writes go through (``preferred`` mode, else any)."""
        if preferred is not None and preferred in self._open:
            return self._open[preferred]
        return next(iter(self._open.values()), None)

    def discard(self, mode: str) -> None:
        """Close and forget the backend session of ``mode``; the next step opens a fresh one."""
        session = self._open.pop(mode, None)
        if session is not None:
            # Already failing closed; the next step opens a fresh session.
            with contextlib.suppress(Exception):
                session.close()
            self._closed_cpu += _unbilled(session)

    def close(self) -> list[BaseException]:
        """Close every open backend session; the failures."""
        failures: list[BaseException] = []
        for mode in sorted(self._open):
            session = self._open.pop(mode)
            try:
                session.close()
            except Exception as exc:
                failures.append(exc)
            self._closed_cpu += _unbilled(session)
        self._open.clear()
        return failures

    def unbilled_cpu_seconds(self) -> float:
        """CPU the backend sessions (open, and closed here) used outside their calls since
        this was last asked (see :class:`~safeexec.backends.base.CpuMetered`)."""
        closed, self._closed_cpu = self._closed_cpu, 0.0
        return closed + sum(_unbilled(session) for session in self._open.values())

    def _backend(self, mode: str) -> Backend:
        if mode not in self._backends:
            if not self._use_default_backends:
                raise BackendUnavailable(
                    f"no backend for mode={mode!r} among backends={sorted(self._backends)}; "
                    "pass one in backends={...}"
                )
            self._backends[mode] = self._make(mode)
        return self._backends[mode]


def _unbilled(session: BackendSession) -> float:
    """What ``session`` used outside its calls (0 for a mode that cannot tell)."""
    if not isinstance(session, CpuMetered):
        return 0.0
    try:
        return max(0.0, session.unbilled_cpu_seconds())
    except OSError:  # its cgroup or process is gone: nothing more can be read
        return 0.0
