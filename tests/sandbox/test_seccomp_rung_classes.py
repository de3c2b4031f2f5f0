"""The second filter: what a rung cannot count is refused, and only what the host names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from safeexec.backends.native.procfs import has_private_ipc
from safeexec.sandbox import seccomp

# In a fresh interpreter: load the filter given as hex, then try each class's way in.
_PROBE = r"""
import ctypes, json, os, socket, sys, tempfile
from safeexec.sandbox import privileges, seccomp
privileges.set_no_new_privs()
program = bytes.fromhex(sys.argv[1])
if program:
    seccomp.load_compiled(program)
libc = ctypes.CDLL(None, use_errno=True)

def errno_of(call):
    try:
        call()
    except OSError as exc:
        return exc.errno
    return 0

def shmget():
    segment = libc.shmget(0, 4096, 0o1600)
    if segment < 0:
        raise OSError(ctypes.get_errno(), "shmget")
    libc.shmctl(segment, 0, None)  # IPC_RMID: no segment outlives the probe

def semget():
    semaphores = libc.semget(0, 1, 0o1600)
    if semaphores < 0:
        raise OSError(ctypes.get_errno(), "semget")
    libc.semctl(semaphores, 0, 0)  # IPC_RMID

def shmat():
    libc.shmat.restype = ctypes.c_void_p
    if libc.shmat(-1, None, 0) == ctypes.c_void_p(-1).value:
        raise OSError(ctypes.get_errno(), "shmat")

def mq_open():
    name = b"/safeexec-probe-%d" % os.getpid()
    queue = libc.mq_open(name, os.O_CREAT | os.O_RDWR, 0o600, None)
    if queue < 0:
        raise OSError(ctypes.get_errno(), "mq_open")
    os.close(queue)
    libc.mq_unlink(name)

def fallocate(mode):
    with tempfile.TemporaryFile() as file:
        if libc.fallocate(file.fileno(), mode, ctypes.c_long(0), ctypes.c_long(4096)) != 0:
            raise OSError(ctypes.get_errno(), "fallocate")

def space():
    return os.open(tempfile.gettempdir(), os.O_TMPFILE | os.O_WRONLY, 0o600)

a, b = socket.socketpair()
print(json.dumps({
    "fallocate_keep_size": errno_of(lambda: fallocate(1)),
    "fallocate": errno_of(lambda: fallocate(0)),
    "posix_fallocate": errno_of(lambda: os.posix_fallocate(space(), 0, 1 << 20)),
    "memfd_create": errno_of(lambda: os.memfd_create("probe")),
    "shmget": errno_of(shmget),
    "shmat": errno_of(shmat),
    "semget": errno_of(semget),
    "mq_open": errno_of(mq_open),
    "sendmsg": errno_of(lambda: a.sendmsg([b"x"])),
    "send": errno_of(lambda: a.send(b"x")),
}))
"""


def _probe(classes: frozenset[str]) -> dict[str, int]:
    program = seccomp.compile_rung_filter(classes)
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, program.hex()],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_no_class_is_no_filter() -> None:
    assert seccomp.compile_rung_filter(frozenset()) == b""


def test_without_a_memory_cgroup_unmapped_shared_memory_is_refused() -> None:
    seen = _probe(frozenset({"unmapped_memory"}))
    assert seen["memfd_create"] == seen["shmget"] == 38  # ENOSYS
    assert seen["sendmsg"] == seen["send"] == seen["fallocate_keep_size"] == 0


def test_without_a_private_ipc_namespace_no_ipc_object_is_reached() -> None:
    seen = _probe(frozenset({"shared_ipc"}))
    assert seen["shmget"] == seen["shmat"] == seen["semget"] == seen["mq_open"] == 38
    assert seen["memfd_create"] == seen["sendmsg"] == seen["send"] == 0


def test_ipc_calls_pass_where_the_namespace_is_private() -> None:
    seen = _probe(frozenset({"hidden_file_holders"}))
    assert seen["shmget"] == seen["semget"] == seen["mq_open"] == 0
    assert seen["shmat"] == 22  # EINVAL: no such segment, asked of the kernel


@pytest.mark.skipif(os.geteuid() != 0, reason="unshare --ipc needs root")
def test_the_host_tells_a_private_ipc_namespace_from_a_shared_one() -> None:
    shared = subprocess.Popen(["sleep", "30"])
    private = subprocess.Popen(["unshare", "--ipc", "sleep", "30"])
    try:
        deadline = time.monotonic() + 10
        while _ipc_inode(private.pid) == _ipc_inode(os.getpid()):  # until unshare has run
            assert time.monotonic() < deadline, "unshare --ipc did not take effect"
            time.sleep(0.01)
        assert has_private_ipc(private.pid, template=os.getpid())
        assert not has_private_ipc(shared.pid, template=os.getpid())
        # A namespace the template holds is every session's: shared too.
        assert not has_private_ipc(private.pid, template=private.pid)
        assert not has_private_ipc(2**22 + 7, template=os.getpid())  # unreadable: shared
    finally:
        for process in (shared, private):
            process.kill()
            process.wait()


def _ipc_inode(pid: int) -> int:
    return os.stat(f"/proc/{pid}/ns/ipc").st_ino


def test_without_a_workdir_mount_descriptors_cannot_go_in_flight() -> None:
    seen = _probe(frozenset({"hidden_file_holders"}))
    assert seen["sendmsg"] == 38
    assert seen["memfd_create"] == seen["shmget"] == seen["send"] == 0


def test_without_a_workdir_mount_blocks_are_written_not_preallocated() -> None:
    seen = _probe(frozenset({"preallocation"}))
    assert seen["fallocate_keep_size"] == seen["fallocate"] == 95  # EOPNOTSUPP
    assert seen["posix_fallocate"] == seen["sendmsg"] == 0  # glibc writes the blocks instead


def test_an_unknown_class_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown rung classes"):
        seccomp.compile_rung_filter(frozenset({"pipes"}))
