"""The session cgroup as the host uses it: required where available, and doctor's proofs fail
when the old, blind mechanisms are put back."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend, cgroup
from safeexec.backends.native.procfs import _process_cpu_seconds
from safeexec.backends.native.self_test import _prove_cgroups
from safeexec.errors import BackendUnavailable
from safeexec.model.values import Limits
from safeexec.sandbox import cgroups
from safeexec.sandbox.layers import Layer

pytestmark = pytest.mark.skipif(
    any(cgroups.available().values()), reason=f"no usable cgroups here: {cgroups.available()}"
)


@pytest.fixture(scope="module")
def backend() -> Iterator[NativeBackend]:
    instance = NativeBackend()
    yield instance
    instance.close()


def test_sessions_get_every_cgroup_layer_and_leave_no_group_behind(
    backend: NativeBackend, tmp_path: Path
) -> None:
    with backend.open(SessionSpec(limits=Limits(), blobs=BlobStore(tmp_path / "b"))) as session:
        for layer in (Layer.CGROUP_MEMORY, Layer.CGROUP_PIDS, Layer.CGROUP_CPU):
            assert session.layers[layer].active, session.layers[layer]
        dirs = [d for d, _v in session._group._group._dirs.values()]  # type: ignore[union-attr]
        assert session.pid in session._group.pids()
    assert dirs and not any(Path(d).exists() for d in dirs)


def test_a_host_that_cannot_set_up_the_group_refuses_the_session(
    backend: NativeBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(_self: cgroups.SessionCgroup, **_limits: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(cgroups.SessionCgroup, "set_limits", refuse)
    with pytest.raises(BackendUnavailable, match="cgroup_memory"):
        backend.open(SessionSpec(limits=Limits(), blobs=BlobStore(tmp_path / "b")))


def test_doctor_proves_the_cgroup_layers(backend: NativeBackend, tmp_path: Path) -> None:
    workdir = tmp_path / "w"
    workdir.mkdir()
    proofs = _prove_cgroups(backend, workdir, BlobStore(tmp_path / "b"))
    assert all(ok for ok, _detail in proofs.values()), proofs


def test_doctor_catches_a_cpu_meter_blind_to_reaped_children(
    backend: NativeBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        cgroup.SessionGroup, "cpu_seconds", lambda _self, pid: _process_cpu_seconds(pid)
    )
    workdir = tmp_path / "w"
    workdir.mkdir()
    proofs = _prove_cgroups(backend, workdir, BlobStore(tmp_path / "b"))
    assert proofs[Layer.CGROUP_CPU][0] is False, proofs[Layer.CGROUP_CPU]


def test_doctor_catches_a_memory_limit_that_does_not_hold(
    backend: NativeBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = cgroups.SessionCgroup.set_limits

    def loose(self: cgroups.SessionCgroup, **limits: int | float) -> None:
        real(self, **{**limits, "memory_bytes": 1 << 30})  # type: ignore[arg-type]

    monkeypatch.setattr(cgroups.SessionCgroup, "set_limits", loose)
    workdir = tmp_path / "w"
    workdir.mkdir()
    proofs = _prove_cgroups(backend, workdir, BlobStore(tmp_path / "b"))
    assert proofs[Layer.CGROUP_MEMORY][0] is False, proofs[Layer.CGROUP_MEMORY]


def test_warm_session_processes_join_their_group_before_any_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The move into a cgroup (an RCU grace period) happens ahead, not on the open's path."""
    joined: dict[int, tuple[float, object]] = {}  # pid: when its join ended, its group's dirs
    real_join = cgroup.WarmGroups.join

    def recording(self: cgroup.WarmGroups, pid: int) -> None:
        real_join(self, pid)
        group = self._groups.get(pid)
        joined[pid] = (time.monotonic(), None if group is None else group._dirs)

    monkeypatch.setattr(cgroup.WarmGroups, "join", recording)
    backend = NativeBackend(pool_size=2)
    try:
        backend.start()
        # The supply settles as it makes warm processes and spawns sessions ahead from them:
        # wait until no process has joined for a second (however slow the machine, an emulated
        # one included), so the open's process is one made ahead.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            last = max((at for at, _dirs in joined.values()), default=None)
            if len(joined) >= 2 and last is not None and time.monotonic() - last > 1.0:
                break
            time.sleep(0.05)
        opened_at = time.monotonic()
        with backend.open(SessionSpec(limits=Limits(), blobs=BlobStore(tmp_path / "b"))) as session:
            at, dirs = joined[session.pid]
            assert at < opened_at
            assert dirs is not None and session._group._group._dirs == dirs  # type: ignore[union-attr]
            assert session.layers[Layer.CGROUP_MEMORY].active
    finally:
        backend.close()
    assert not backend._supply.warm_groups._groups
