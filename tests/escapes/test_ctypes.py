from __future__ import annotations

import json
import platform
from typing import TYPE_CHECKING

import pytest

from safeexec.model.values import ExecStatus

pytestmark = pytest.mark.skipif(
    platform.machine() != "x86_64", reason="syscall numbers below are x86_64"
)

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_raw_syscalls_through_ctypes_meet_the_same_walls(sandbox: Sandbox) -> None:
    code = """
import ctypes, errno, json, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
out = {}
out['socket'] = libc.syscall(41, 2, 1, 0), ctypes.get_errno()            # socket(AF_INET)
fd = libc.syscall(257, -100, b'/etc/shadow', 0)                          # openat
out['openat'] = fd, ctypes.get_errno()
out['unshare'] = libc.syscall(272, 0x40000000), ctypes.get_errno()       # unshare(NEWNET)
out['setuid0'] = libc.syscall(105, 0), ctypes.get_errno()                # setuid(0)
out['io_uring'] = libc.syscall(425, 1, None), ctypes.get_errno()         # io_uring_setup
out['mount'] = libc.syscall(165, b'none', b'/tmp', b'tmpfs', 0, None), ctypes.get_errno()
out['personality'] = libc.syscall(135, 0x0040000), ctypes.get_errno()    # ADDR_NO_RANDOMIZE
out['umount2'] = libc.syscall(166, b'/', 0), ctypes.get_errno()
out['pivot_root'] = libc.syscall(155, b'.', b'.'), ctypes.get_errno()
out['setns'] = libc.syscall(308, 0, 0), ctypes.get_errno()
out['userfaultfd'] = libc.syscall(323, 0), ctypes.get_errno()
print(json.dumps(out))
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.OK, ran.text
    results = json.loads(ran.stdout)
    assert len(results) == 11, results
    assert all(value == -1 for value, _errno in results.values()), results
    assert results["io_uring"][1] == 38  # ENOSYS: libraries fall back to ordinary syscalls
    sandbox.assert_usable()


KILLED = {
    "bpf": 321,
    "perf_event_open": 298,
    "keyctl": 250,
    "kexec_load": 246,
    "init_module": 175,
    "delete_module": 176,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "reboot": 169,
}


@pytest.mark.parametrize("name", sorted(KILLED))
def test_a_killed_syscall_through_ctypes_is_reported_as_seccomp(
    sandbox: Sandbox, name: str
) -> None:
    ran = sandbox.run(f"import ctypes; ctypes.CDLL(None).syscall({KILLED[name]}, 0, 0, 0, 0)")
    assert ran.result.status is ExecStatus.KILLED
    assert "SIGSYS" in ran.result.message and "seccomp" in ran.result.message
    assert any(event.kind == "syscall_killed" for event in ran.result.events)
    assert ran.result.state_lost
    sandbox.assert_usable()


def test_the_x32_syscall_abi_cannot_bypass_the_filter(sandbox: Sandbox) -> None:
    # x32 numbers carry bit 30; a denylist that forgot them would let ptrace through.
    ran = sandbox.run("import ctypes; ctypes.CDLL(None).syscall(0x40000000 | 101, 0, 0, 0, 0)")
    assert ran.result.status is ExecStatus.KILLED
    sandbox.assert_usable()
