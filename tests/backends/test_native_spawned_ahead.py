"""Sessions spawned ahead: an open takes one (once), a dead template's are dropped, and closing
the backend lets every unused one go with its workdir."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.model.values import ExecRequest, ExecStatus, Limits
from safeexec.sandbox.layers import Layer

_WAIT_SECONDS = 30.0


def _ahead(backend: NativeBackend, count: int) -> list[Path]:
    """The workdirs of the sessions spawned ahead, once there are ``count``."""
    deadline = time.monotonic() + _WAIT_SECONDS
    while len(ready := backend._supply._spawned_ahead._ready) < count:
        assert time.monotonic() < deadline, "no session was spawned ahead"
        time.sleep(0.02)
    return [workdir for _template, workdir, _disk, _spawned in ready]


def _mounted(path: Path) -> bool:
    with open("/proc/self/mountinfo") as fh:
        return any(line.split()[4] == str(path) for line in fh)


def test_an_open_takes_a_session_spawned_ahead_once_and_it_is_fully_confined(
    tmp_path: Path,
) -> None:
    backend = NativeBackend(pool_size=2)
    blobs = BlobStore(tmp_path / "b")
    try:
        backend.start()
        waiting = _ahead(backend, 2)
        with (
            backend.open(SessionSpec(limits=Limits(), blobs=blobs)) as first,
            backend.open(SessionSpec(limits=Limits(), blobs=blobs)) as second,
        ):
            assert [first.workdir, second.workdir] == waiting
            assert first.pid != second.pid
            write = ExecRequest(action_id="a", code="print(open('x', 'w').write('y'))")
            for session in (first, second):
                ran = session.run(write)
                assert ran.status is ExecStatus.OK
                assert blobs.get(ran.stdout) == b"1\n"
                layers = session.layers
                for layer in (Layer.LANDLOCK, Layer.SECCOMP, Layer.MOUNTNS, Layer.RLIMITS):
                    assert layers[layer].active, layers[layer]
            assert first.workdir not in _ahead(backend, 0)
    finally:
        backend.close()


def test_closing_the_backend_lets_the_unused_ones_go_with_their_workdirs(tmp_path: Path) -> None:
    backend = NativeBackend(pool_size=2)
    backend.start()
    waiting = _ahead(backend, 2)
    backend.close()
    assert not any(path.exists() or _mounted(path) for path in waiting)
    # A closed backend still opens sessions (spawned at the open).
    with backend.open(SessionSpec(limits=Limits(), blobs=BlobStore(tmp_path / "b"))) as session:
        ran = session.run(ExecRequest(action_id="a", code="x = 1"))
        assert ran.status is ExecStatus.OK
    backend.close()


def test_those_of_a_dead_template_are_dropped_and_the_open_spawns_anew(tmp_path: Path) -> None:
    backend = NativeBackend(pool_size=2)
    try:
        backend.start()
        waiting = _ahead(backend, 2)
        template = backend._supply.running_template()
        assert template is not None
        os.kill(template._process.pid, signal.SIGKILL)
        template._process.wait()
        with backend.open(SessionSpec(limits=Limits(), blobs=BlobStore(tmp_path / "b"))) as one:
            assert one.workdir not in waiting
            assert one.run(ExecRequest(action_id="a", code="x = 1")).status is ExecStatus.OK
        assert not any(path.exists() or _mounted(path) for path in waiting)
    finally:
        backend.close()
