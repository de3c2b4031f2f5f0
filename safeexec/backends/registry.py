"""The built-in backends by mode name, made on first use; the process-wide set of them that
sessions share by default; and the one list of modes that run the model's code in the host
process."""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Callable

from safeexec.backends.base import Backend
from safeexec.errors import BackendUnavailable, InProcessRefused

__all__ = [
    "IN_PROCESS_MODES",
    "PRELOADING_MODES",
    "SharedBackends",
    "default_backend",
    "refuse_in_process",
    "runs_in_process",
    "shared_backends",
]

IN_PROCESS_MODES: frozenset[str] = frozenset({"restricted-inprocess", "dsl-inprocess"})
"""Modes whose code runs in the host process: not a security boundary (a guard bug is a host
compromise). They exist to measure the guards' overhead without the worker round trip and for
hosts that cannot fork; no face offers one unless its operator's configuration names it."""


PRELOADING_MODES: frozenset[str] = frozenset({"native", "restricted"})
"""Modes whose built-in backend forks its sessions from a template process that can import
modules once, before any session exists (``default_backend``'s ``preload``)."""


def runs_in_process(mode: str) -> bool:
    """Whether ``mode`` runs the model's code in the host process (see ``IN_PROCESS_MODES``)."""
    return mode in IN_PROCESS_MODES


def refuse_in_process(mode: str, *, allowed: bool, face: str, option: str) -> None:
    """Raise ``InProcessRefused`` if ``mode`` runs in the host process and ``face``'s operator
    did not allow that with ``option`` (named in the message, as the way to allow it)."""
    if runs_in_process(mode) and not allowed:
        raise InProcessRefused(
            f"mode={mode!r} runs the model's code in this host process, which is not a security "
            f"boundary; {face} refuses it unless its operator allows it with {option} "
            "(or choose 'restricted', the same runtime inside the confined worker)",
            mode=mode,
        )


def default_backend(
    name: str, *, pool_size: int | None = None, preload: tuple[str, ...] = ()
) -> Backend:
    """Make the built-in backend called ``name``; ``BackendUnavailable`` if it cannot be had.

    ``pool_size``: how many sessions a backend with a template keeps forked ahead (None: its
    default); a caller that opens a single session (``safeexec run``) asks for 1. ``preload``:
    modules the template of a mode in ``PRELOADING_MODES`` imports before it forks any session
    (other modes ignore it).
    """
    # Imported here so that a missing optional piece fails only the mode that needs it.
    try:
        if name in PRELOADING_MODES:
            from safeexec.backends.native import NativeBackend

            executor = "python" if name == "native" else "restricted"
            native = (
                NativeBackend(executor=executor, preload=preload)
                if pool_size is None
                else NativeBackend(executor=executor, preload=preload, pool_size=pool_size)
            )
            if name == "native":
                return native
            from safeexec.backends.restricted import RestrictedBackend

            return RestrictedBackend(native=native)
        if name == "restricted-inprocess":
            from safeexec.backends.restricted import InProcessRestrictedBackend

            return InProcessRestrictedBackend()
        if name == "dsl":
            from safeexec.backends.dsl import DslBackend
            from safeexec.backends.native import NativeBackend

            if pool_size is None:
                return DslBackend()
            return DslBackend(native=NativeBackend(executor="dsl", pool_size=pool_size))
        if name == "dsl-inprocess":
            from safeexec.backends.dsl import InProcessDslBackend

            return InProcessDslBackend()
        if name == "fake":
            from safeexec.backends.fake import FakeBackend, not_executed

            return FakeBackend(not_executed)
    except ImportError as exc:
        raise BackendUnavailable(
            f"backend name={name!r} cannot be loaded here: {exc}; "
            "install the missing piece or choose another mode"
        ) from exc
    raise BackendUnavailable(
        f"no backend named name={name!r}; choose one of 'native', 'restricted', "
        "'restricted-inprocess', 'dsl', 'dsl-inprocess', 'fake' "
        "or pass backends={...} to Session"
    )


class SharedBackends:
    """One backend per mode and preload set for the whole process, made on first use and kept
    warm, so a new ``Session()`` opens in milliseconds (a native backend's template and the
    sessions it forks ahead are made once, not per session).

    Bounded: one backend per mode and per set of modules its template preloads (a session asks
    for the data-stack modules its policy lets it import: at most one set per policy in use), each
    keeping ``pool_size`` sessions forked ahead. Closed at interpreter exit, or by :meth:`close`
    (the next use makes them again). Fork-safe: a child process starts with none (the parent's
    template and workers stay the parent's). Sessions hold their own worker process each; what
    they share is the template they fork from.
    """

    def __init__(
        self, make: Callable[..., Backend] = default_backend, *, pool_size: int | None = None
    ) -> None:
        self._make = make
        self._pool_size = pool_size
        self._lock = threading.Lock()
        self._backends: dict[tuple[str, tuple[str, ...]], Backend] = {}

    def get(self, mode: str, *, preload: tuple[str, ...] = ()) -> Backend:
        """The shared backend of ``mode`` whose template preloads ``preload`` (``make`` hears of
        a preload only when there is one); ``BackendUnavailable`` if it cannot be had."""
        key = (mode, tuple(sorted(set(preload))))
        with self._lock:
            backend = self._backends.get(key)
            if backend is None:
                options: dict[str, object] = {}
                if self._pool_size is not None:
                    options["pool_size"] = self._pool_size
                if key[1]:
                    options["preload"] = key[1]
                backend = self._make(mode, **options)
                self._backends[key] = backend
            return backend

    def close(self) -> list[BaseException]:
        """Close every shared backend (their open sessions keep running until closed)."""
        with self._lock:
            backends, self._backends = self._backends, {}
        failures: list[BaseException] = []
        for backend in backends.values():
            try:
                backend.close()
            except Exception as exc:
                failures.append(exc)
        return failures

    def _after_fork_in_child(self) -> None:
        """Drop the parent's backends without touching them (a fresh lock: the parent's may
        have been held by another thread at the fork)."""
        self._backends = {}
        self._lock = threading.Lock()


shared_backends = SharedBackends()
"""The set ``Session()`` uses when no ``backends=`` are given."""
atexit.register(shared_backends.close)
os.register_at_fork(after_in_child=shared_backends._after_fork_in_child)
