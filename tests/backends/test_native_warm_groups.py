"""Warm groups: a pool member's cgroup has limits before any claim, and a claim gets its own."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.model.values import Limits
from safeexec.sandbox import cgroups
from safeexec.sandbox.layers import Layer

pytestmark = pytest.mark.skipif(
    any(cgroups.available().values()), reason=f"no usable cgroups here: {cgroups.available()}"
)

_WAIT_SECONDS = 30.0


def _pids_max(pid: int) -> str:
    """The ``pids.max`` of the group ``pid`` is in, read from the kernel."""
    with open(f"/proc/{pid}/cgroup") as fh:
        lines = [line.rstrip("\n").split(":", 2) for line in fh]
    paths = {name: path for _id, names, path in lines for name in names.split(",")}
    directory = "/sys/fs/cgroup/pids" + paths["pids"] if "pids" in paths else "/sys/fs/cgroup"
    if "pids" not in paths:
        directory += paths[""]
    with open(os.path.join(directory, "pids.max")) as fh:
        return fh.read().strip()


def _joined(pid: int) -> str:
    """The ``pids.max`` of a pool member's group; "" while it has none of its own (the root
    group has no such file) or is gone."""
    try:
        return _pids_max(pid)
    except OSError:
        return ""


def _members(template_pid: int, session_pids: set[int]) -> list[int]:
    """The template's children that serve no session."""
    found = []
    for task in os.listdir(f"/proc/{template_pid}/task"):
        with open(f"/proc/{template_pid}/task/{task}/children") as fh:
            found += [pid for pid in map(int, fh.read().split()) if pid not in session_pids]
    return found


def test_a_claim_with_other_limits_than_the_warm_groups_gets_its_own(tmp_path: Path) -> None:
    backend = NativeBackend(pool_size=2)
    blobs = BlobStore(tmp_path / "b")
    try:
        for processes in (13, Limits().max_processes, 14):
            limits = Limits(max_processes=processes)
            with backend.open(SessionSpec(limits=limits, blobs=blobs)) as session:
                assert session.pid is not None
                assert _pids_max(session.pid) == str(processes)
                assert session.layers[Layer.CGROUP_PIDS].detail.endswith(f"pids.max={processes}")
    finally:
        backend.close()


def test_members_forked_after_an_open_get_its_limits_ahead(tmp_path: Path) -> None:
    backend = NativeBackend(pool_size=2)
    blobs = BlobStore(tmp_path / "b")
    spec = SessionSpec(limits=Limits(max_processes=11), blobs=blobs)
    try:
        # The members forked after the second claim are announced after the first open took
        # its group (one forked just after that claim may be announced before it).
        backend.open(spec).close()
        with backend.open(spec) as session:
            template_pid = backend.statistics().template_pid
            assert template_pid is not None and session.pid is not None
            deadline = time.monotonic() + _WAIT_SECONDS
            while "11" not in [_joined(pid) for pid in _members(template_pid, {session.pid})]:
                assert time.monotonic() < deadline, "no new member got the last open's limits"
                time.sleep(0.05)
    finally:
        backend.close()
