"""The second filter: what a rung cannot count is refused, and only what the host names."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

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
    "sendmsg": errno_of(lambda: a.sendmsg([b"x"])),
    "send": errno_of(lambda: a.send(b"x")),
}))
"""


def _probe(classes: frozenset[str]) -> dict[str, int]:
    program = seccomp.compile_uncounted_filter(classes)
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, program.hex()],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_no_class_is_no_filter() -> None:
    assert seccomp.compile_uncounted_filter(frozenset()) == b""


def test_without_a_memory_cgroup_unmapped_shared_memory_is_refused() -> None:
    seen = _probe(frozenset({"unmapped_memory"}))
    assert seen["memfd_create"] == seen["shmget"] == 38  # ENOSYS
    assert seen["sendmsg"] == seen["send"] == seen["fallocate_keep_size"] == 0


def test_without_a_workdir_mount_descriptors_cannot_go_in_flight() -> None:
    seen = _probe(frozenset({"hidden_file_holders"}))
    assert seen["sendmsg"] == 38
    assert seen["memfd_create"] == seen["shmget"] == seen["send"] == 0


def test_without_a_workdir_mount_blocks_are_written_not_preallocated() -> None:
    seen = _probe(frozenset({"preallocation"}))
    assert seen["fallocate_keep_size"] == seen["fallocate"] == 95  # EOPNOTSUPP
    assert seen["posix_fallocate"] == seen["sendmsg"] == 0  # glibc writes the blocks instead


def test_an_unknown_class_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown uncounted classes"):
        seccomp.compile_uncounted_filter(frozenset({"pipes"}))
