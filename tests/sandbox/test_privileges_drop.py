"""Dropping to a session's uid leaves the process readable by that uid (dumpable)."""

from __future__ import annotations

import os

import pytest

from safeexec.sandbox import privileges
from safeexec.sandbox.syscalls import libc

_PR_GET_DUMPABLE = 3


def test_a_process_dropped_to_another_uid_stays_dumpable() -> None:
    """The kernel makes a process undumpable when its ids change; then only CAP_SYS_PTRACE
    reads its /proc, which a root host in a container lacks (it reads as the session's uid)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to change uid")
    pid = os.fork()
    if pid == 0:
        try:
            privileges.drop_to(12345, 12345)
            os._exit(0 if libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0) == 1 else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
