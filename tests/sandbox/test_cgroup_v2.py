"""cgroup v2: the subtree is found where the host's group is mounted (or where configured), its
own processes move into a leaf when the kernel's no-internal-processes rule asks, a controller
the parent does not hand down is reported missing, and ``cgroup.kill`` ends a session's group
(before Linux 5.14, which has none, signals to each process do).

The tests that touch a real hierarchy make a group of their own in this machine's unified
hierarchy (v2, or the v2 half of a hybrid host, where only unbound controllers are offered) and
remove it, with everything in it, whatever happens.
"""

from __future__ import annotations

import errno
import os
import secrets
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from safeexec.sandbox import cgroup_v2
from safeexec.sandbox.cgroup_v2 import HOST_LEAF, PARENT_VARIABLE, delegate, locate, own_group
from safeexec.sandbox.cgroups import SessionCgroup

_MOUNTINFO = (
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "41 31 0:38 /kubepods/pod1 /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
)


# The no-internal-processes rule holds for these; threaded ones (cpu, cpuset, pids) may be
# enabled over processes.
_DOMAIN_CONTROLLERS = ("memory", "io", "hugetlb", "misc", "rdma")


def _text(path: str) -> str:
    return Path(path).read_text()


def test_own_group_is_the_v2_line_of_proc_cgroup() -> None:
    assert own_group("4:memory:/a\n0::/kubepods/pod1/c1\n") == "/kubepods/pod1/c1"
    assert own_group("4:memory:/a\n") is None


def test_the_subtree_is_the_own_group_in_a_mount_that_shows_it() -> None:
    found = locate(_MOUNTINFO, "0::/kubepods/pod1/c1\n", None)
    assert found == ("/sys/fs/cgroup/unified/c1", "", False)  # not its processes to move
    # A container's own group: the root of its cgroup namespace's mount.
    assert locate(_MOUNTINFO, "0::/kubepods/pod1\n", None) == ("/sys/fs/cgroup/unified", "", True)


def test_a_group_outside_every_cgroup2_mount_is_no_subtree() -> None:
    directory, problem, _delegated = locate(_MOUNTINFO, "0::/system.slice/x\n", None)
    assert directory == "" and "no cgroup2 mount shows" in problem
    directory, problem, _delegated = locate(_MOUNTINFO.splitlines()[1], "0::/\n", None)
    assert directory == "" and problem == "no cgroup2 filesystem is mounted"


def test_a_configured_subtree_must_be_an_absolute_cgroup2_directory(tmp_path: Path) -> None:
    assert "not an absolute path" in locate(_MOUNTINFO, "0::/\n", "relative/x")[1]
    directory, problem, _delegated = locate(_MOUNTINFO, "0::/\n", str(tmp_path))
    assert directory == "" and f"{PARENT_VARIABLE}={tmp_path}" in problem


# --- on this machine's unified hierarchy (root) ----------------------------------------------


def _unified_root() -> str | None:
    mounts = cgroup_v2.cgroup2_mounts(_text("/proc/self/mountinfo"))
    usable = [point for point, root in mounts if root == "/" and os.access(point, os.W_OK)]
    return usable[0] if usable else None


needs_hierarchy = pytest.mark.skipif(
    os.geteuid() != 0 or _unified_root() is None,
    reason="needs root and a writable cgroup2 mount of the whole hierarchy",
)


def _remove(group: str) -> None:
    """Kill everything in ``group`` and below, then remove the groups bottom-up."""
    if not os.path.isdir(group):
        return
    Path(group, "cgroup.kill").write_text("1")
    for _attempt in range(500):  # killed processes leave the group within milliseconds
        if "populated 0" in _text(os.path.join(group, "cgroup.events")):
            break
        time.sleep(0.01)
    for directory, _dirs, _files in os.walk(group, topdown=False):
        os.rmdir(directory)


@pytest.fixture
def group() -> Iterator[str]:
    """A fresh group of the unified hierarchy, removed with everything in it afterwards; the
    root hands it a controller (enabled for the test, then disabled, where it was not)."""
    root = _unified_root()
    assert root is not None
    control = os.path.join(root, "cgroup.subtree_control")
    enabled = _text(control).split()
    offered = _text(os.path.join(root, "cgroup.controllers")).split()
    domain = [name for name in _DOMAIN_CONTROLLERS if name in offered]
    lent = [name for name in domain[:1] if name not in enabled]  # the root may hold processes
    for name in lent:
        Path(control).write_text(f"+{name}")
    path = os.path.join(root, f"safeexec-test-{secrets.token_hex(4)}")
    os.mkdir(path)
    try:
        yield path
    finally:
        _remove(path)
        for name in lent:
            Path(control).write_text(f"-{name}")


def _sleeper_in(group: str) -> int:
    """A child process moved into ``group`` (it sleeps until killed)."""
    pid = os.fork()
    if pid == 0:
        time.sleep(300)
        os._exit(0)
    Path(group, "cgroup.procs").write_text(str(pid))
    return pid


def _procs(group: str) -> set[int]:
    return {int(p) for p in _text(os.path.join(group, "cgroup.procs")).split()}


@needs_hierarchy
def test_the_groups_processes_move_into_a_leaf_so_controllers_can_be_handed_down(
    group: str,
) -> None:
    offered = _text(os.path.join(group, "cgroup.controllers")).split()
    domain = [name for name in _DOMAIN_CONTROLLERS if name in offered]
    if not domain:
        pytest.skip("the unified hierarchy offers no domain controller here")
    controller = domain[0]
    host = {_sleeper_in(group), _sleeper_in(group)}
    try:
        kept = delegate(group, [controller], delegated=False)  # not ours: nothing moves
        assert kept.moved == () and "no delegated subtree" in kept.missing[controller]
        assert _procs(group) == host
        subtree = delegate(group, [controller, "no-such-controller"], delegated=True)
        assert subtree.problem == "" and subtree.directory == group
        assert controller in subtree.controllers
        assert controller in _text(os.path.join(group, "cgroup.subtree_control")).split()
        assert set(subtree.moved) == host
        assert _procs(group) == set() and _procs(os.path.join(group, HOST_LEAF)) == host
        assert "not in" in subtree.missing["no-such-controller"]
        # A leaf beside the host's gets the controller, and takes processes.
        leaf = os.path.join(group, "session")
        os.mkdir(leaf)
        assert controller in _text(os.path.join(leaf, "cgroup.controllers")).split()
        moved = _sleeper_in(leaf)
        host.add(moved)
        # A host started later in the leaf finds the subtree, not the leaf.
        mountinfo, relative = _text("/proc/self/mountinfo"), os.path.relpath(group, _unified_root())
        assert locate(mountinfo, f"0::/{relative}/{HOST_LEAF}\n", None) == (group, "", True)
        assert locate(mountinfo, f"0::/{relative}/session\n", None) == (leaf, "", False)
    finally:
        for pid in host:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


@needs_hierarchy
def test_cgroup_kill_ends_every_process_of_a_session_leaf(
    group: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    leaf = os.path.join(group, "session")
    os.mkdir(leaf)
    pids = [_sleeper_in(leaf) for _ in range(3)]
    # Only cgroup.kill may end them: signals sent one by one reach nobody.
    monkeypatch.setattr(os, "kill", lambda pid, sig: None)
    SessionCgroup({"": (leaf, 2)}).remove()
    monkeypatch.undo()
    assert not os.path.exists(leaf)  # removed: it was empty (else the fixture kills them)
    for pid in pids:
        _pid, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


@needs_hierarchy
def test_before_cgroup_kill_signals_end_every_process_of_a_session_leaf(
    group: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Linux before 5.14 has no cgroup.kill (writing it fails with ENOENT): the group is emptied
    # by SIGKILL to each process it lists, again until none is left.
    from safeexec.sandbox import cgroups

    leaf = os.path.join(group, "session")
    os.mkdir(leaf)
    pids = [_sleeper_in(leaf) for _ in range(3)]
    write = cgroups._write
    refused: list[str] = []

    def without_cgroup_kill(path: str, value: str) -> None:
        if os.path.basename(path) == "cgroup.kill":
            refused.append(path)
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)
        write(path, value)

    monkeypatch.setattr(cgroups, "_write", without_cgroup_kill)
    SessionCgroup({"": (leaf, 2)}).remove()
    monkeypatch.undo()
    assert refused == [os.path.join(leaf, "cgroup.kill")]
    assert not os.path.exists(leaf)
    for pid in pids:
        _pid, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
