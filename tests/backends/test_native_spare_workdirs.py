"""Spare workdirs: made ahead, each handed out once, all removed (and unmounted) on close."""

from __future__ import annotations

import os
from pathlib import Path

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.backends.native.disk import SpareWorkdirs
from safeexec.model.values import ExecRequest, ExecStatus, Limits


def _mounted(path: Path) -> bool:
    with open("/proc/self/mountinfo") as fh:
        return any(line.split()[4] == str(path) for line in fh)


def test_spares_are_kept_up_to_the_pool_handed_out_once_and_removed_on_close() -> None:
    spares = SpareWorkdirs(size_bytes=1 << 20, inodes=100, keep=2)
    for _ in range(3):
        spares.fill()
    ahead = [path for path, _mount in spares._spares]
    assert len(set(ahead)) == 2
    taken = spares.take()
    spares.close()
    spares.fill()  # a closed pool makes none
    fresh = spares.take()  # and hands out workdirs made on demand
    try:
        assert taken[0] in ahead and fresh[0] not in ahead
        left = [path for path in ahead if path != taken[0]]
        assert not any(path.exists() or _mounted(path) for path in left)
        for path, mount in (taken, fresh):  # what was handed out belongs to its taker
            assert path.is_dir() and mount.active is _mounted(path)
            assert mount.active or os.geteuid() != 0
    finally:
        for path, mount in (taken, fresh):
            mount.remove()
            path.rmdir()


def test_sessions_get_a_fresh_workdir_each_and_close_leaves_no_spare(tmp_path: Path) -> None:
    backend = NativeBackend(pool_size=2)
    blobs = BlobStore(tmp_path / "b")
    seen: list[Path] = []
    try:
        for _ in range(3):
            with backend.open(SessionSpec(limits=Limits(), blobs=blobs)) as session:
                seen.append(session.workdir)
                ran = session.run(ExecRequest(action_id="a", code="import os; print(os.listdir())"))
                assert ran.status is ExecStatus.OK
                assert blobs.get(ran.stdout).decode().strip() == "['.tmp']"
                open_file = "open('left.txt', 'w').write('x')"
                assert (
                    session.run(ExecRequest(action_id="b", code=open_file)).status is ExecStatus.OK
                )
            assert not session.workdir.exists()
        assert len(set(seen)) == 3
        spares = [path for path, _mount in backend._supply._spare_workdirs._spares]
    finally:
        backend.close()
    assert not any(path.exists() or _mounted(path) for path in spares)
