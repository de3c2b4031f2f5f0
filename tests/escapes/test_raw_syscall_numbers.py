"""Syscalls made by number through ``syscall(2)``, past anything a libc wrapper would check.

A seccomp denylist sees numbers, not names: the x32 ABI (``nr | 0x40000000``) reaches the same
kernel code under other numbers, namespace games pass their flags in registers (``clone``) or in
memory (``clone3``), io_uring does opens and connects the filter never sees, and any syscall
newer than libseccomp's table (``statmount``/``listmount`` list the mount tree that /proc hides)
would pass unseen. Each probe runs in a forked child so a kill shows as its wait status.
"""

from __future__ import annotations

import platform
from typing import TYPE_CHECKING

import pytest

from safeexec.model.values import ExecStatus
from safeexec.sandbox.seccomp import newest_known_syscall

if TYPE_CHECKING:
    from escape_support import Sandbox

PROBE = """
import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def probe(number, *args):
    pid = os.fork()
    if pid == 0:
        result = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args])
        os.write(1, f"{{number}} {{result}} {{ctypes.get_errno()}}\\n".encode())
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        print(number, "killed", signal.Signals(os.WTERMSIG(status)).name)
{calls}
"""

X32 = 0x40000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
SIGCHLD = 17
# x86_64 numbers (the only architecture with an x32 ABI).
GETPID, UNSHARE, SETNS, CLONE, CLONE3, IO_URING_SETUP = 39, 272, 308, 56, 435, 425


def _probe(sandbox: Sandbox, calls: list[tuple[int, ...]]) -> dict[int, list[str]]:
    code = PROBE.format(calls="\n".join(f"probe{call!r}" for call in calls))
    ran = sandbox.run(code, wall_seconds=30)
    assert ran.result.status is ExecStatus.OK, ran.text
    lines = [line.split() for line in ran.stdout.splitlines()]
    return {int(number): rest for number, *rest in lines}


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x32 is an x86_64 ABI")
def test_x32_syscall_numbers_kill_the_process(sandbox: Sandbox) -> None:
    seen = _probe(sandbox, [(X32 | GETPID,), (X32 | UNSHARE, CLONE_NEWUSER), (X32 | SETNS, 0, 0)])
    assert seen == {
        X32 | GETPID: ["killed", "SIGSYS"],
        X32 | UNSHARE: ["killed", "SIGSYS"],
        X32 | SETNS: ["killed", "SIGSYS"],
    }
    sandbox.assert_usable()


@pytest.mark.skipif(platform.machine() != "x86_64", reason="syscall numbers of x86_64")
def test_namespace_and_io_uring_syscalls_by_number_are_refused(sandbox: Sandbox) -> None:
    seen = _probe(
        sandbox,
        [
            (UNSHARE, CLONE_NEWUSER),
            (SETNS, 0, 0),
            (CLONE, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0),
            (CLONE, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0),
            (CLONE3, 0, 0),
            (IO_URING_SETUP, 8, 0),
        ],
    )
    eperm, enosys = "1", "38"
    assert seen[UNSHARE] == ["-1", eperm]
    assert seen[SETNS] == ["-1", eperm]
    assert seen[CLONE] == ["-1", eperm]  # both clone probes print under the same number
    assert seen[CLONE3] == ["-1", enosys]
    assert seen[IO_URING_SETUP] == ["-1", enosys]
    sandbox.assert_usable()


def test_syscalls_newer_than_the_filter_are_unavailable(sandbox: Sandbox) -> None:
    newest = newest_known_syscall()
    # 457 statmount and 458 listmount (the same numbers on every architecture since 424).
    numbers = sorted({max(newest + 1, 457), max(newest + 2, 458), 467, 511})
    seen = _probe(sandbox, [(number, 0, 0, 0, 0) for number in numbers])
    assert seen == {number: ["-1", "38"] for number in numbers}
    sandbox.assert_usable()
