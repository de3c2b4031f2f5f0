"""A session cgroup enforces its limits, meters exited processes, and leaves nothing behind."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from safeexec.backends.native.procfs import _process_cpu_seconds
from safeexec.sandbox import cgroups
from safeexec.sandbox.cgroups import Controller

pytestmark = pytest.mark.skipif(
    any(cgroups.available().values()), reason=f"no usable cgroups here: {cgroups.available()}"
)


def _burn_in_auto_reaped_child(group: cgroups.SessionCgroup, seconds: float) -> int:
    """Fork a process into ``group`` that forks an auto-reaped burner, waits, and idles."""
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.read(ready_r, 1)  # wait until the parent moved us into the group
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)
        if os.fork() == 0:
            end = time.process_time() + seconds
            while time.process_time() < end:
                pass
            os._exit(0)
        time.sleep(seconds * 4 + 1)  # the burner is gone long before
        os._exit(0)
    group.add(pid)
    os.write(ready_w, b"x")
    os.close(ready_r)
    os.close(ready_w)
    return pid


def test_limits_are_written_to_each_controller() -> None:
    group = cgroups.create(memory_bytes=64 << 20, max_processes=7, cpu_cores=0.5)
    try:
        assert group.controllers == frozenset(Controller)
        assert "=67108864" in group.describe(Controller.MEMORY)
        assert group.describe(Controller.PIDS).endswith("pids.max=7")
        assert "=50000" in group.describe(Controller.CPU)
    finally:
        group.remove()


def test_limits_can_be_raised_and_lowered_again() -> None:
    group = cgroups.create(memory_bytes=64 << 20, max_processes=7, cpu_cores=0.5)
    try:
        for memory, processes in ((128 << 20, 9), (32 << 20, 5), (32 << 20, 5)):
            group.set_limits(memory_bytes=memory, max_processes=processes, cpu_cores=1.0)
            assert group.describe(Controller.MEMORY).endswith(f"={memory}")
            assert group.describe(Controller.PIDS).endswith(f"pids.max={processes}")
            assert "=100000" in group.describe(Controller.CPU)
    finally:
        group.remove()


def test_the_cgroup_meters_cpu_that_procfs_cannot_see() -> None:
    group = cgroups.create(memory_bytes=64 << 20, max_processes=8, cpu_cores=1.0)
    try:
        pid = _burn_in_auto_reaped_child(group, 0.3)
        deadline = time.monotonic() + 10
        while (group.cpu_seconds() < 0.3 or len(group.pids()) > 1) and time.monotonic() < deadline:
            time.sleep(0.05)  # until the burner has burnt its share and the kernel reaped it
        assert group.cpu_seconds() >= 0.3
        # The old meter, over the same tree: the reaped burner's CPU is nowhere in /proc.
        assert _process_cpu_seconds(pid) < 0.1
    finally:
        group.remove()
    os.waitpid(pid, 0)


def test_remove_kills_everything_inside_and_removes_the_directories() -> None:
    group = cgroups.create(memory_bytes=64 << 20, max_processes=8, cpu_cores=1.0)
    dirs = [directory for directory, _version in group._dirs.values()]
    pid = _burn_in_auto_reaped_child(group, 0.01)
    assert pid in group.pids()
    group.remove()
    _pid, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert not any(Path(d).exists() for d in dirs)
    group.remove()  # idempotent


def test_meters_read_afresh_through_kept_descriptors_closed_on_remove() -> None:
    before = set(os.listdir("/proc/self/fd"))
    group = cgroups.create(memory_bytes=64 << 20, max_processes=8, cpu_cores=1.0)
    pid = _burn_in_auto_reaped_child(group, 0.2)
    first = group.cpu_seconds()
    assert group.oom_kills() == 0
    kept = set(os.listdir("/proc/self/fd")) - before
    assert len(kept) == 2  # the CPU meter and the memory events, opened once
    deadline = time.monotonic() + 10
    while group.cpu_seconds() < first + 0.2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert group.cpu_seconds() >= first + 0.2  # a reading is the counter now, not the first
    assert set(os.listdir("/proc/self/fd")) - before == kept
    group.remove()
    os.waitpid(pid, 0)
    assert set(os.listdir("/proc/self/fd")) <= before
