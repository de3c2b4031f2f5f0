"""The native backend's registry of open sessions survives opens and closes on other threads."""

from __future__ import annotations

import gc
import threading

from safeexec.backends.native.supply import _OpenSessions


class _Session:
    """Stands in for a NativeSession: the registry only holds weak references to it."""


def test_copying_while_other_threads_add_and_discard_never_raises() -> None:
    registry = _OpenSessions()
    keep = [_Session() for _ in range(200)]
    stop = threading.Event()
    failures: list[BaseException] = []

    def churn() -> None:
        while not stop.is_set():
            for session in keep:
                registry.add(session)  # type: ignore[arg-type]
            for session in keep:
                registry.discard(session)  # type: ignore[arg-type]

    threads = [threading.Thread(target=churn) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        for _ in range(2000):
            try:
                registry.snapshot()
            except RuntimeError as exc:
                failures.append(exc)
                break
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert not failures


def test_a_collected_session_leaves_the_registry() -> None:
    registry = _OpenSessions()
    session = _Session()
    registry.add(session)  # type: ignore[arg-type]
    assert len(registry) == 1
    del session
    gc.collect()
    assert len(registry) == 0
    assert registry.snapshot() == []
